#include "CFrameHeaderLoop.h"

static inline uint32_t read_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline void write_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

uint64_t sdl_c_parse_headers(const uint8_t *bytes, size_t header_count, size_t count) {
    uint64_t sum = 0;
    size_t offset = 0;
    const size_t end = header_count * 12;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = bytes + offset;
        sdl_c_header h;
        h.version = p[0] >> 4;
        h.encrypted = (p[0] >> 3) & 1;
        h.frame_type = p[0] & 0x07;
        h.service_type = p[1];
        h.frame_info = p[2];
        h.session_id = p[3];
        h.data_size = read_be32(p + 4);
        // Version 1 headers end after the data size.
        h.message_id = h.version >= 2 ? read_be32(p + 8) : 0;
        sum += h.version + h.encrypted + h.frame_type + h.service_type + h.frame_info + h.session_id
            + (uint64_t)h.data_size + (uint64_t)h.message_id;
        offset += 12;
        if (offset == end) offset = 0;
    }
    return sum;
}

void sdl_c_write_headers(const sdl_c_header *headers, size_t header_count, uint8_t *out, size_t count) {
    size_t index = 0;
    for (size_t i = 0; i < count; i++) {
        const sdl_c_header *h = &headers[index];
        uint8_t *p = out + index * 12;
        p[0] = (uint8_t)((h->version << 4) | (h->encrypted ? 0x08 : 0) | (h->frame_type & 0x07));
        p[1] = h->service_type;
        p[2] = h->frame_info;
        p[3] = h->session_id;
        write_be32(p + 4, h->data_size);
        if (h->version >= 2) write_be32(p + 8, h->message_id);
        index += 1;
        if (index == header_count) index = 0;
    }
}
