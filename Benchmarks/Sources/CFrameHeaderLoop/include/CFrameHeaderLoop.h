#ifndef SDL_CFRAMEHEADERLOOP_H
#define SDL_CFRAMEHEADERLOOP_H
// The reference for the frame header rows: the shortest C that parses or writes the 12-byte v2-v5
// header (protocol spec 5.4.1 §3.1), with no validation, as a C stack's inner loop would.
#include <stddef.h>
#include <stdint.h>

/// A parsed header: every field the Swift FrameHeader holds.
typedef struct {
    uint8_t version;
    uint8_t encrypted;
    uint8_t frame_type;
    uint8_t service_type;
    uint8_t frame_info;
    uint8_t session_id;
    uint32_t data_size;
    uint32_t message_id;
} sdl_c_header;

/// Parses `count` headers, walking through the `header_count` headers stored back to back at
/// `bytes` (wrapping around), and folds every field into the returned checksum.
uint64_t sdl_c_parse_headers(const uint8_t *bytes, size_t header_count, size_t count);

/// Writes `count` headers from `headers` (wrapping around after `header_count`) into `out`,
/// which holds `header_count` × 12 bytes, starting again at its beginning when it is full.
void sdl_c_write_headers(const sdl_c_header *headers, size_t header_count, uint8_t *out, size_t count);
#endif
