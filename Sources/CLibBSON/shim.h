#ifndef SDL_CLIBBSON_SHIM_H
#define SDL_CLIBBSON_SHIM_H
// libbson, used only as the reference implementation by tests, fuzzers and benchmarks.
#include <bson/bson.h>
#endif
