#ifndef SDL_CLIBBSON_SHIM_H
#define SDL_CLIBBSON_SHIM_H
// libbson, used only as the reference implementation by tests, fuzzers and benchmarks.
// On Debian bson_t is 128-byte aligned, so Swift imports it as an opaque pointer: these small
// helpers keep bson_t values on the C side.
#include <bson/bson.h>

/// Whether libbson accepts `len` bytes as one document: 1 when bson_init_static accepts the
/// length header, bson_validate accepts the content with `flags`, and a full walk (the canonical
/// Extended JSON conversion) meets no corruption; else 0. The walk is needed because libbson
/// 1.23's bson_validate returns true for some corrupt documents (unknown element types,
/// strings running past their document) that its own iterators then refuse.
static inline int sdl_bson_validate(const uint8_t *data, size_t len, uint32_t flags, size_t *offset) {
    bson_t b;
    *offset = 0;
    if (!bson_init_static(&b, data, len)) {
        return 0;
    }
    if (!bson_validate(&b, (bson_validate_flags_t)flags, offset)) {
        return 0;
    }
    char *json = bson_as_canonical_extended_json(&b, NULL);
    if (json == NULL) {
        return 0;
    }
    bson_free(json);
    return 1;
}

/// libbson's canonical Extended JSON of `len` bytes, or NULL. Free with sdl_bson_free_string.
static inline char *sdl_bson_canonical_json(const uint8_t *data, size_t len) {
    bson_t b;
    if (!bson_init_static(&b, data, len)) {
        return NULL;
    }
    return bson_as_canonical_extended_json(&b, NULL);
}

/// libbson's relaxed Extended JSON of `len` bytes, or NULL. Free with sdl_bson_free_string.
static inline char *sdl_bson_relaxed_json(const uint8_t *data, size_t len) {
    bson_t b;
    if (!bson_init_static(&b, data, len)) {
        return NULL;
    }
    return bson_as_relaxed_extended_json(&b, NULL);
}

static inline void sdl_bson_free_string(char *s) { bson_free(s); }

/// The byte length of a document built with bson_new/bson_append_*.
static inline uint32_t sdl_bson_length(const bson_t *b) { return b->len; }

/// Appends a regex without libbson reordering: bson_append_regex sorts options itself.
static inline bool sdl_bson_append_regex(bson_t *b, const char *key, const char *pattern, const char *options) {
    return bson_append_regex(b, key, -1, pattern, options);
}
#endif
