#ifndef SDL_CLIBBSONBENCH_SHIM_H
#define SDL_CLIBBSONBENCH_SHIM_H
// libbson's side of the benchmarks, written the way a C user of libbson would: bson_new +
// BSON_APPEND_* (children begun and ended in place) + bson_get_data to encode; bson_init_static
// + a bson_iter walk that reads every field to decode.
#include <bson/bson.h>
#include <string.h>

/// Encodes the StartServiceACK payload; copies the bytes to `out` (capacity `cap`) and returns
/// the length, as a caller handing the bytes to a transport would.
static inline size_t sdl_bench_encode_ack(uint8_t *out, size_t cap) {
    bson_t *b = bson_new();
    bson_t child;
    BSON_APPEND_UTF8(b, "protocolVersion", "5.4.1");
    BSON_APPEND_INT32(b, "hashId", 0x1234567);
    BSON_APPEND_INT64(b, "mtu", 131084);
    BSON_APPEND_ARRAY_BEGIN(b, "secondaryTransports", &child);
    BSON_APPEND_UTF8(&child, "0", "TCP_WIFI");
    bson_append_array_end(b, &child);
    BSON_APPEND_ARRAY_BEGIN(b, "audioServiceTransports", &child);
    BSON_APPEND_INT32(&child, "0", 1);
    BSON_APPEND_INT32(&child, "1", 2);
    bson_append_array_end(b, &child);
    BSON_APPEND_ARRAY_BEGIN(b, "videoServiceTransports", &child);
    BSON_APPEND_INT32(&child, "0", 2);
    BSON_APPEND_INT32(&child, "1", 1);
    bson_append_array_end(b, &child);
    size_t len = b->len;
    if (len <= cap) {
        memcpy(out, bson_get_data(b), len);
    }
    bson_destroy(b);
    return len;
}

static const char *const sdl_bench_hours[] = {
    "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11",
    "12", "13", "14", "15", "16", "17", "18", "19", "20", "21", "22", "23"};

static inline void sdl_bench_append_temperature(bson_t *parent, const char *key, double value) {
    bson_t t;
    BSON_APPEND_DOCUMENT_BEGIN(parent, key, &t);
    BSON_APPEND_UTF8(&t, "unit", "CELSIUS");
    BSON_APPEND_DOUBLE(&t, "value", value);
    bson_append_document_end(parent, &t);
}

static inline void sdl_bench_append_time(bson_t *parent, const char *key, int32_t hour) {
    bson_t t;
    BSON_APPEND_DOCUMENT_BEGIN(parent, key, &t);
    BSON_APPEND_INT32(&t, "year", 2026);
    BSON_APPEND_INT32(&t, "month", 11);
    BSON_APPEND_INT32(&t, "day", 23);
    BSON_APPEND_INT32(&t, "hour", hour);
    BSON_APPEND_INT32(&t, "minute", 0);
    BSON_APPEND_INT32(&t, "second", 0);
    bson_append_document_end(parent, &t);
}

/// Encodes the OnAppServiceData-shaped document with `hours` hourly forecasts (at most 24): 2,033
/// bytes with 4, 6,212 with 19 (same fields and order as the Swift side).
static inline size_t sdl_bench_encode_app_service_data(uint8_t *out, size_t cap, int hours) {
    bson_t *b = bson_new();
    bson_t service, weather, location, coordinate, lines, current, hourly, hour;
    BSON_APPEND_DOCUMENT_BEGIN(b, "serviceData", &service);
    BSON_APPEND_UTF8(&service, "serviceType", "WEATHER");
    BSON_APPEND_UTF8(&service, "serviceID", "3f1e9a52-7c4b-4d2e-9b8a-6a0c5e1f2d34");
    BSON_APPEND_DOCUMENT_BEGIN(&service, "weatherServiceData", &weather);
    BSON_APPEND_DOCUMENT_BEGIN(&weather, "location", &location);
    BSON_APPEND_DOCUMENT_BEGIN(&location, "coordinate", &coordinate);
    BSON_APPEND_DOUBLE(&coordinate, "latitudeDegrees", 42.331427);
    BSON_APPEND_DOUBLE(&coordinate, "longitudeDegrees", -83.045754);
    bson_append_document_end(&location, &coordinate);
    BSON_APPEND_UTF8(&location, "locationName", "Detroit");
    BSON_APPEND_ARRAY_BEGIN(&location, "addressLines", &lines);
    BSON_APPEND_UTF8(&lines, "0", "1 Woodward Avenue");
    BSON_APPEND_UTF8(&lines, "1", "Detroit, MI 48226");
    bson_append_array_end(&location, &lines);
    BSON_APPEND_UTF8(&location, "locationDescription", "Downtown, near the riverfront");
    bson_append_document_end(&weather, &location);
    BSON_APPEND_DOCUMENT_BEGIN(&weather, "currentForecast", &current);
    sdl_bench_append_time(&current, "currentTime", 14);
    sdl_bench_append_temperature(&current, "temperatureHigh", 21.5);
    sdl_bench_append_temperature(&current, "temperatureLow", 12.25);
    sdl_bench_append_temperature(&current, "apparentTemperature", 19.75);
    BSON_APPEND_UTF8(&current, "weatherSummary", "Partly cloudy with a light breeze from the west");
    BSON_APPEND_DOUBLE(&current, "humidity", 0.65);
    BSON_APPEND_DOUBLE(&current, "cloudCover", 0.4);
    BSON_APPEND_DOUBLE(&current, "moonPhase", 0.5);
    BSON_APPEND_INT32(&current, "windBearing", 270);
    BSON_APPEND_DOUBLE(&current, "windGust", 12.3);
    BSON_APPEND_DOUBLE(&current, "windSpeed", 7.8);
    BSON_APPEND_DOUBLE(&current, "precipProbability", 0.1);
    BSON_APPEND_DOUBLE(&current, "visibility", 16.09);
    BSON_APPEND_UTF8(&current, "weatherIconImageName", "partly-cloudy-day");
    bson_append_document_end(&weather, &current);
    BSON_APPEND_ARRAY_BEGIN(&weather, "hourlyForecast", &hourly);
    for (int i = 0; i < hours && i < 24; i++) {
        BSON_APPEND_DOCUMENT_BEGIN(&hourly, sdl_bench_hours[i], &hour);
        sdl_bench_append_time(&hour, "currentTime", 15 + i);
        sdl_bench_append_temperature(&hour, "temperatureHigh", 20.5 - i);
        BSON_APPEND_UTF8(&hour, "weatherSummary", "Mostly sunny");
        BSON_APPEND_DOUBLE(&hour, "humidity", 0.6 + i * 0.01);
        BSON_APPEND_DOUBLE(&hour, "precipProbability", 0.05 * i);
        BSON_APPEND_DOUBLE(&hour, "windSpeed", 6.5 + i);
        BSON_APPEND_INT32(&hour, "windBearing", 260 + i);
        BSON_APPEND_INT64(&hour, "timestamp", 1795000000000LL + i * 3600000LL);
        bson_append_document_end(&hourly, &hour);
    }
    bson_append_array_end(&weather, &hourly);
    bson_append_document_end(&service, &weather);
    bson_append_document_end(b, &service);
    size_t len = b->len;
    if (len <= cap) {
        memcpy(out, bson_get_data(b), len);
    }
    bson_destroy(b);
    return len;
}

/// Reads every field of a document through bson_iter (recursing into documents and arrays),
/// folding the values into a checksum so the compiler cannot drop the reads.
static inline uint64_t sdl_bench_walk(bson_iter_t *iter) {
    uint64_t sum = 0;
    while (bson_iter_next(iter)) {
        sum += bson_iter_key_len(iter);
        switch (bson_iter_type(iter)) {
        case BSON_TYPE_INT32: sum += (uint64_t)bson_iter_int32(iter); break;
        case BSON_TYPE_INT64: sum += (uint64_t)bson_iter_int64(iter); break;
        case BSON_TYPE_DOUBLE: { double d = bson_iter_double(iter); uint64_t bits; memcpy(&bits, &d, 8); sum += bits; break; }
        case BSON_TYPE_BOOL: sum += bson_iter_bool(iter); break;
        case BSON_TYPE_UTF8: { uint32_t len; const char *s = bson_iter_utf8(iter, &len); sum += len + (uint8_t)s[0]; break; }
        case BSON_TYPE_DOCUMENT:
        case BSON_TYPE_ARRAY: {
            bson_iter_t child;
            if (bson_iter_recurse(iter, &child)) sum += sdl_bench_walk(&child);
            break;
        }
        default: sum += 1; break;
        }
    }
    return sum;
}

/// bson_init_static + walk; returns the checksum, or 0 if libbson refuses the bytes.
static inline uint64_t sdl_bench_decode(const uint8_t *data, size_t len) {
    bson_t b;
    bson_iter_t iter;
    if (!bson_init_static(&b, data, len) || !bson_iter_init(&iter, &b)) return 0;
    return sdl_bench_walk(&iter);
}

/// The same, with bson_validate (UTF-8 checked) first: the work SDLBSON always does.
static inline uint64_t sdl_bench_validate_and_decode(const uint8_t *data, size_t len) {
    bson_t b;
    bson_iter_t iter;
    size_t offset;
    if (!bson_init_static(&b, data, len)) return 0;
    if (!bson_validate(&b, BSON_VALIDATE_UTF8 | BSON_VALIDATE_UTF8_ALLOW_NULL, &offset)) return 0;
    if (!bson_iter_init(&iter, &b)) return 0;
    return sdl_bench_walk(&iter);
}
/// One step of building a document with libbson, for documents whose shape is only known at run
/// time (the RPC benchmarks build the same document as SDLRPC's BSON writer, field by field).
typedef struct {
    uint8_t op;          /* SDL_BENCH_OP_* */
    const char *key;
    const char *string;  /* UTF8 */
    int64_t integer;     /* INT32, INT64, BOOL */
    double number;       /* DOUBLE */
} sdl_bench_op;

enum {
    SDL_BENCH_OP_DOCUMENT = 1, SDL_BENCH_OP_ARRAY = 2, SDL_BENCH_OP_END = 3, SDL_BENCH_OP_UTF8 = 4,
    SDL_BENCH_OP_INT32 = 5, SDL_BENCH_OP_INT64 = 6, SDL_BENCH_OP_DOUBLE = 7, SDL_BENCH_OP_BOOL = 8,
};

/// Builds a document from `ops` the way a C program would (bson_new, BSON_APPEND_*, children
/// begun and ended in place), copies it to `out` and returns its length; 0 if it nests deeper
/// than 32 levels.
static inline size_t sdl_bench_build(const sdl_bench_op *ops, size_t count, uint8_t *out, size_t cap) {
    bson_t *root = bson_new();
    bson_t children[32];
    bson_t *parents[32];
    uint8_t arrays[32];
    int depth = 0;
    bson_t *current = root;
    for (size_t i = 0; i < count; i++) {
        const sdl_bench_op *o = &ops[i];
        switch (o->op) {
        case SDL_BENCH_OP_DOCUMENT:
        case SDL_BENCH_OP_ARRAY:
            if (depth == 32) { bson_destroy(root); return 0; }
            parents[depth] = current;
            arrays[depth] = o->op == SDL_BENCH_OP_ARRAY;
            if (arrays[depth]) bson_append_array_begin(current, o->key, -1, &children[depth]);
            else bson_append_document_begin(current, o->key, -1, &children[depth]);
            current = &children[depth];
            depth++;
            break;
        case SDL_BENCH_OP_END:
            depth--;
            if (arrays[depth]) bson_append_array_end(parents[depth], current);
            else bson_append_document_end(parents[depth], current);
            current = parents[depth];
            break;
        case SDL_BENCH_OP_UTF8: bson_append_utf8(current, o->key, -1, o->string, -1); break;
        case SDL_BENCH_OP_INT32: bson_append_int32(current, o->key, -1, (int32_t)o->integer); break;
        case SDL_BENCH_OP_INT64: bson_append_int64(current, o->key, -1, o->integer); break;
        case SDL_BENCH_OP_DOUBLE: bson_append_double(current, o->key, -1, o->number); break;
        case SDL_BENCH_OP_BOOL: bson_append_bool(current, o->key, -1, o->integer != 0); break;
        }
    }
    size_t len = root->len;
    if (len <= cap) memcpy(out, bson_get_data(root), len);
    bson_destroy(root);
    return len;
}
#endif
