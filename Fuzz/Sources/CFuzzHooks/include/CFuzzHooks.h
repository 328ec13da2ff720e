#ifndef SDL_FUZZ_HOOKS_H
#define SDL_FUZZ_HOOKS_H
#include <stddef.h>

/// Bytes the program holds on the heap right now, as AddressSanitizer's allocator counts them;
/// 0 in a build without AddressSanitizer (no heap check is made then).
size_t sdl_fuzz_live_heap_bytes(void);

#endif
