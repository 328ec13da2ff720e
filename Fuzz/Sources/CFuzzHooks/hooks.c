#include "CFuzzHooks.h"

// AddressSanitizer's runtime defines this (sanitizer/allocator_interface.h); the weak
// declaration leaves it null when the runtime is not linked, as in the plain replay build.
extern size_t __sanitizer_get_current_allocated_bytes(void) __attribute__((weak));

size_t sdl_fuzz_live_heap_bytes(void) {
    return __sanitizer_get_current_allocated_bytes ? __sanitizer_get_current_allocated_bytes() : 0;
}
