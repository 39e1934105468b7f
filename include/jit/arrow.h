/* jitexpr — the Arrow C data interface: the two ABI-stable structures through which Arrow
 * implementations (Arrow C++, PyArrow, Polars, DuckDB, nanoarrow, ...) hand columns to each
 * other without copying. Written from the published specification
 * (https://arrow.apache.org/docs/format/CDataInterface.html); only the declarations are here.
 *
 * The specification asks every copy of these declarations to sit behind the guard
 * ARROW_C_DATA_INTERFACE, so that several copies (Arrow's own abi.h, nanoarrow's, this one) can
 * be included in one translation unit: whichever comes first wins, and they are identical.
 *
 * In short (see the specification for the whole contract):
 *   - ArrowSchema describes a type: `format` is a short string ("i" int32, "g" float64, "b"
 *     boolean, "u" utf8, "+s" struct, ...), `children` the child types of nested ones.
 *   - ArrowArray holds the data: `length` elements starting at logical `offset`, `null_count`
 *     (-1 when unknown), `buffers` (for primitive types two: the validity bitmap, LSB bit order,
 *     NULL when there are no nulls; then the values).
 *   - Both are released by calling their `release` callback once; a released structure has
 *     `release == NULL`. Moving one is a bitwise copy after which the source is marked released. */
#ifndef JITEXPR_ARROW_H
#define JITEXPR_ARROW_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

/* ArrowSchema.flags */
#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
    const char* format;   /* mandatory, NUL-terminated: the type */
    const char* name;     /* optional (may be NULL): the field name */
    const char* metadata; /* optional: binary key/value pairs */
    int64_t flags;        /* ARROW_FLAG_* bits */
    int64_t n_children;
    struct ArrowSchema** children;
    struct ArrowSchema* dictionary; /* non-NULL for dictionary-encoded types */
    void (*release)(struct ArrowSchema*);
    void* private_data; /* the producer's */
};

struct ArrowArray {
    int64_t length;     /* logical number of elements */
    int64_t null_count; /* -1 when not computed */
    int64_t offset;     /* logical offset into the buffers, in elements (bits for bitmaps) */
    int64_t n_buffers;
    int64_t n_children;
    const void** buffers; /* n_buffers pointers; a validity buffer may be NULL without nulls */
    struct ArrowArray** children;
    struct ArrowArray* dictionary;
    void (*release)(struct ArrowArray*);
    void* private_data; /* the producer's */
};

#endif /* ARROW_C_DATA_INTERFACE */

/* The Arrow C stream interface: a sequence of arrays of one schema (Python's
 * `__arrow_c_stream__` capsules, "arrow_array_stream"). get_schema and get_next return 0 or an
 * errno value; get_next sets out->release to NULL at the end of the stream. */
#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
    int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
    int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
    const char* (*get_last_error)(struct ArrowArrayStream*);
    void (*release)(struct ArrowArrayStream*);
    void* private_data;
};

#endif /* ARROW_C_STREAM_INTERFACE */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* JITEXPR_ARROW_H */
