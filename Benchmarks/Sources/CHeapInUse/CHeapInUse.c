#include "CHeapInUse.h"
#if defined(__linux__)
#include <malloc.h>
#endif

size_t c_heap_in_use(void) {
// __GLIBC__ comes from <features.h>, which <malloc.h> includes: test it only after that.
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    // Chunks above the mmap threshold are mapped apart from the arenas: counted too.
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
#else
    return 0;
#endif
}
