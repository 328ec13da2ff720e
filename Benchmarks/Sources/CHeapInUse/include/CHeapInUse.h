#ifndef C_HEAP_IN_USE_H
#define C_HEAP_IN_USE_H
#include <stddef.h>

/// Bytes of the heap in use, every arena's and mapped chunks' (glibc's mallinfo2().uordblks +
/// hblkhd; 0 where that is unavailable). Swift's Glibc module does not export malloc.h.
size_t c_heap_in_use(void);

#endif
