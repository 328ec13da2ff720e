#ifndef SDL_FUZZ_CLIBBSON_SHIM_H
#define SDL_FUZZ_CLIBBSON_SHIM_H
// libbson 1.23, the reference side of FuzzBSONDiff. bson_t is 128-byte aligned on Debian, so
// Swift sees it only as an opaque pointer: every bson_t here lives on the C side.
// Included by its full path: the headers include each other relative to their own folder.
#include <libbson-1.0/bson/bson.h>
#include <string.h>

/// libbson's canonical Extended JSON of `len` bytes when it accepts them as one document, else
/// NULL (free with sdl_fuzz_bson_free). Accepting takes three steps, because libbson 1.23's
/// bson_validate passes some corrupt documents its own iterators refuse: bson_init_static
/// accepts the length header, bson_validate the content under `flags`, and the conversion to
/// Extended JSON (a full walk) returns text. Whether that text is well-formed JSON is the
/// caller's check: libbson prints `"key" : ,` for an element it cannot read.
static inline char *sdl_fuzz_bson_canonical_json(const uint8_t *data, size_t len, uint32_t flags) {
    bson_t b;
    size_t offset = 0;
    if (!bson_init_static(&b, data, len) || !bson_validate(&b, (bson_validate_flags_t)flags, &offset)) {
        return NULL;
    }
    return bson_as_canonical_extended_json(&b, NULL);
}

static inline void sdl_fuzz_bson_free(char *s) { bson_free(s); }

/// A place where libbson 1.23 skips a check bsonspec.org makes, as libbson itself reads the
/// document: the byte after a code-with-scope's code string (must be its NUL), the last byte of
/// its scope (must be the scope's terminating NUL), the bytes of a regex's options (a cstring,
/// so UTF-8).
typedef struct {
    int kind;
    size_t start;
    size_t end;
} sdl_fuzz_blind_spot;

enum { SDL_FUZZ_CODE_STRING_END = 1, SDL_FUZZ_SCOPE_END = 2, SDL_FUZZ_REGEX_OPTIONS = 3 };

static inline void sdl_fuzz_add_spot(sdl_fuzz_blind_spot *out, size_t capacity, size_t *count, int kind, size_t start, size_t end) {
    if (*count < capacity) {
        out[*count].kind = kind;
        out[*count].start = start;
        out[*count].end = end;
    }
    *count += 1;
}

static inline void sdl_fuzz_walk(const uint8_t *base, const uint8_t *data, uint32_t len, int depth,
                                 sdl_fuzz_blind_spot *out, size_t capacity, size_t *count) {
    bson_t doc;
    bson_iter_t it;
    if (depth > 256 || !bson_init_static(&doc, data, len) || !bson_iter_init(&it, &doc)) {
        return;
    }
    while (bson_iter_next(&it)) {
        uint32_t length = 0, scope_length = 0;
        const uint8_t *child = NULL;
        switch (bson_iter_type(&it)) {
        case BSON_TYPE_DOCUMENT:
            bson_iter_document(&it, &length, &child);
            sdl_fuzz_walk(base, child, length, depth + 1, out, capacity, count);
            break;
        case BSON_TYPE_ARRAY:
            bson_iter_array(&it, &length, &child);
            sdl_fuzz_walk(base, child, length, depth + 1, out, capacity, count);
            break;
        case BSON_TYPE_CODEWSCOPE: {
            const char *code = bson_iter_codewscope(&it, &length, &scope_length, &child);
            size_t code_end = (size_t)((const uint8_t *)code - base) + length;
            sdl_fuzz_add_spot(out, capacity, count, SDL_FUZZ_CODE_STRING_END, code_end, code_end + 1);
            size_t scope_end = (size_t)(child - base) + scope_length - 1;
            sdl_fuzz_add_spot(out, capacity, count, SDL_FUZZ_SCOPE_END, scope_end, scope_end + 1);
            sdl_fuzz_walk(base, child, scope_length, depth + 1, out, capacity, count);
            break;
        }
        case BSON_TYPE_REGEX: {
            const char *options = NULL;
            bson_iter_regex(&it, &options);
            size_t start = (size_t)((const uint8_t *)options - base);
            sdl_fuzz_add_spot(out, capacity, count, SDL_FUZZ_REGEX_OPTIONS, start, start + strlen(options));
            break;
        }
        default:
            break;
        }
    }
}

/// Writes up to `capacity` blind spots of a document libbson accepts into `out`; returns how many
/// there are (more than `capacity` when some did not fit).
static inline size_t sdl_fuzz_bson_blind_spots(const uint8_t *data, size_t len, sdl_fuzz_blind_spot *out, size_t capacity) {
    size_t count = 0;
    if (len <= UINT32_MAX) {
        sdl_fuzz_walk(data, data, (uint32_t)len, 0, out, capacity, &count);
    }
    return count;
}
#endif
