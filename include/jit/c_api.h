/* jitexpr — the C API: evaluate array expressions on DLPack tensors from C (or any language
 * with a C FFI). No C++ exception crosses it: every function reports failure through its
 * return value and jitexpr_last_error().
 *
 *   jitexpr_runtime* rt = jitexpr_runtime_create(JITEXPR_BACKEND_AUTO);
 *   const char* names[2] = {"a", "b"};
 *   jitexpr_arg args[2] = {{JITEXPR_ARG_TENSOR, {.tensor = a}},   // the caller's tensors, borrowed
 *                          {JITEXPR_ARG_TENSOR, {.tensor = b}}};
 *   DLManagedTensor* c = NULL;
 *   if (jitexpr_eval_named(rt, "b * 2 + a", 2, names, args, &c) != JITEXPR_OK)
 *       fprintf(stderr, "%s\n", jitexpr_last_error());
 *   ...                                              // read c->dl_tensor
 *   c->deleter(c);
 *   jitexpr_runtime_destroy(rt);
 *
 * Thread safety: a runtime and a kernel may be used from many threads at once. The last error
 * is per thread. */
#ifndef JITEXPR_C_API_H
#define JITEXPR_C_API_H

#include <jit/arrow.h>
#include <jit/dlpack.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes: 0 on success, else the kind of error (the C++ exception type behind it). */
typedef enum {
    JITEXPR_OK = 0,
    JITEXPR_ERROR_PARSE = 1,    /* syntax error in the text (message has a caret line) */
    JITEXPR_ERROR_NAME = 2,     /* unknown name or function (caret) */
    JITEXPR_ERROR_TYPE = 3,     /* dtype not allowed by an operation, wrong arity (caret) */
    JITEXPR_ERROR_SHAPE = 4,    /* shapes that do not broadcast (caret) */
    JITEXPR_ERROR_VALUE = 5,    /* e.g. integer ** negative integer (caret) */
    JITEXPR_ERROR_ARGUMENT = 6, /* arguments that do not fit: count, device, DLPack layout, NULL */
    JITEXPR_ERROR_IO = 7,
    JITEXPR_ERROR_COMPILE = 8,    /* NVRTC rejected generated code (a jitexpr bug) */
    JITEXPR_ERROR_CUDA = 9,       /* a CUDA driver call failed */
    JITEXPR_ERROR_NO_DEVICE = 10, /* CUDA asked for, no driver or device */
    JITEXPR_ERROR_INTERNAL = 11,  /* a jitexpr bug */
    JITEXPR_ERROR_OUT_OF_MEMORY = 12,
    JITEXPR_ERROR_UNKNOWN = 13,
    JITEXPR_ERROR_CANCELLED = 14, /* stopped by jitexpr_cancel or a cancel token; the message names
                                    arguments that were being written in place (partly written) */
    JITEXPR_ERROR_INDEX = 15,     /* an integer index out of range, too many indices (caret) */
    JITEXPR_ERROR_READ_ONLY = 16  /* the program would write into a read-only tensor (caret) */
} jitexpr_status;

/* Backends for jitexpr_runtime_create (and what jitexpr_runtime_backend answers). */
enum {
    JITEXPR_BACKEND_AUTO = 0, /* CUDA when a driver and a device are present, else the CPU */
    JITEXPR_BACKEND_CPU = 1,
    JITEXPR_BACKEND_CUDA = 2
};

/* The message of the last failed call on this thread: the whole text, with the caret line for
 * errors in the program text. "" when no call has failed. Valid until the next failing call
 * on this thread. */
const char* jitexpr_last_error(void);
/* The status of the last failed call on this thread (JITEXPR_OK when none has failed). */
int jitexpr_last_error_code(void);
/* "parse", "name", "type", ... for a status; "ok" for 0; "?" for an unknown value. */
const char* jitexpr_status_name(int status);
/* The library version, "0.2.0". */
const char* jitexpr_version(void);

/* --- Dates and durations ---------------------------------------------------------------------- */

/* DLPack has no date type: a NumPy datetime64 or timedelta64 tensor travels as an int64 tensor
 * of its counts (of the unit since 1970-01-01T00:00 UTC, or of the unit; INT64_MIN is NaT) with
 * one of these codes beside it: in a JITEXPR_ARG_TENSOR_TEMPORAL argument, and from
 * jitexpr_last_result_dtype() for a result. The values are jit::DType's (include/jit/dtype.hpp);
 * the suffix is NumPy's unit code (M months, m minutes). */
typedef enum {
    JITEXPR_DTYPE_NUMERIC = 0, /* not a date or duration: the DLPack dtype says what it is */
    JITEXPR_DATETIME64_Y = 33,
    JITEXPR_DATETIME64_M = 34,
    JITEXPR_DATETIME64_W = 35,
    JITEXPR_DATETIME64_D = 36,
    JITEXPR_DATETIME64_h = 37,
    JITEXPR_DATETIME64_m = 38,
    JITEXPR_DATETIME64_s = 39,
    JITEXPR_DATETIME64_ms = 40,
    JITEXPR_DATETIME64_us = 41,
    JITEXPR_DATETIME64_ns = 42,
    JITEXPR_DATETIME64_ps = 43,
    JITEXPR_DATETIME64_fs = 44,
    JITEXPR_DATETIME64_as = 45,
    JITEXPR_TIMEDELTA64_Y = 49,
    JITEXPR_TIMEDELTA64_M = 50,
    JITEXPR_TIMEDELTA64_W = 51,
    JITEXPR_TIMEDELTA64_D = 52,
    JITEXPR_TIMEDELTA64_h = 53,
    JITEXPR_TIMEDELTA64_m = 54,
    JITEXPR_TIMEDELTA64_s = 55,
    JITEXPR_TIMEDELTA64_ms = 56,
    JITEXPR_TIMEDELTA64_us = 57,
    JITEXPR_TIMEDELTA64_ns = 58,
    JITEXPR_TIMEDELTA64_ps = 59,
    JITEXPR_TIMEDELTA64_fs = 60,
    JITEXPR_TIMEDELTA64_as = 61
} jitexpr_dtype;

/* "datetime64[s]", "timedelta64[ns]" for a code of jitexpr_dtype; "numeric" for
 * JITEXPR_DTYPE_NUMERIC; "?" for anything else. */
const char* jitexpr_dtype_name(int dtype);
/* The jitexpr_dtype of the result (*out) of this thread's last successful evaluation:
 * JITEXPR_DTYPE_NUMERIC when it is a number or bool (its DLPack dtype says which), else the date
 * or duration its int64 counts are. JITEXPR_DTYPE_NUMERIC when there was no result. */
int jitexpr_last_result_dtype(void);

/* --- Runtimes ------------------------------------------------------------------------------- */

typedef struct jitexpr_runtime jitexpr_runtime;

/* A runtime with the options of the environment (JITEXPR_* variables) and the given backend
 * (JITEXPR_BACKEND_AUTO keeps the environment's choice). NULL on failure (e.g. CUDA asked for
 * without a device: JITEXPR_ERROR_NO_DEVICE). */
jitexpr_runtime* jitexpr_runtime_create(int backend);
/* The same on CUDA device `device` (its ordinal; -1 keeps the environment's, JITEXPR_DEVICE,
 * else 0). A device the machine lacks, or a device other than 0 on the CPU, fails with
 * JITEXPR_ERROR_ARGUMENT (JITEXPR_ERROR_NO_DEVICE when CUDA is not available at all). */
jitexpr_runtime* jitexpr_runtime_create_on(int backend, int device);
/* Waits for the calls in flight on `rt` (from other threads) to return, then frees it; a call
 * that starts while it waits fails with JITEXPR_ERROR_ARGUMENT. Calling anything with `rt`
 * after this returns is an error of the caller's. NULL is allowed. */
void jitexpr_runtime_destroy(jitexpr_runtime* rt);
/* JITEXPR_BACKEND_CPU or JITEXPR_BACKEND_CUDA; -1 for NULL. */
int jitexpr_runtime_backend(const jitexpr_runtime* rt);
/* The device ordinal the runtime evaluates on (0 on the CPU); -1 for NULL. */
int jitexpr_runtime_device(const jitexpr_runtime* rt);

typedef struct {
    uint64_t hits;      /* evaluations that found a prepared program */
    uint64_t misses;    /* evaluations that parsed, checked and prepared a program */
    uint64_t compiles;  /* NVRTC compiles (CUDA) */
    uint64_t disk_hits; /* CUDA modules read from the disk cache */
    uint64_t entries;   /* prepared programs held */
    double compile_ms;  /* total NVRTC time */
} jitexpr_stats;

int jitexpr_runtime_stats(const jitexpr_runtime* rt, jitexpr_stats* out);

/* --- Arguments ------------------------------------------------------------------------------ */

typedef enum {
    JITEXPR_ARG_TENSOR = 0,  /* value.tensor: a DLPack tensor, borrowed */
    JITEXPR_ARG_BOOL = 1,    /* value.b (0 or not) */
    JITEXPR_ARG_INT = 2,     /* value.i */
    JITEXPR_ARG_FLOAT = 3,   /* value.f */
    JITEXPR_ARG_COMPLEX = 4, /* value.c[0] + value.c[1] i */
    /* value.tensor_versioned: a DLPack 1.x tensor, borrowed. One flagged
     * DLPACK_FLAG_BITMASK_READ_ONLY is read but never written: a program that would write into
     * it (an assignment to its name of a value of its dtype and shape) fails with
     * JITEXPR_ERROR_READ_ONLY before anything runs. (A JITEXPR_ARG_TENSOR has no such flag: it
     * is writable.) */
    JITEXPR_ARG_TENSOR_VERSIONED = 5,
    /* value.temporal: an int64 DLPack tensor, borrowed, of the counts of the date or duration
     * dtype value.temporal.dtype (a jitexpr_dtype); another DLPack dtype, or a code that is not
     * a date or duration, is JITEXPR_ERROR_ARGUMENT. */
    JITEXPR_ARG_TENSOR_TEMPORAL = 6,
    /* value.strings: a fixed-width string array in host memory (NumPy's S and U layout), borrowed
     * and only read: the string functions and comparisons take it (DLPack has no string dtype).
     * Arrow string columns go through jitexpr_eval_arrow. */
    JITEXPR_ARG_STRINGS = 7
} jitexpr_arg_kind;

typedef enum {
    JITEXPR_STRINGS_BYTES = 0, /* NumPy S: `itemsize` bytes per element */
    JITEXPR_STRINGS_UCS4 = 1   /* NumPy U: `itemsize` / 4 code points (native order) per element */
} jitexpr_strings_kind;

/* A fixed-width string array: element (i0, i1, ...) is `itemsize` bytes at data + (i0 * strides[0]
 * + i1 * strides[1] + ...) * itemsize, its NULs at the end not counted (NumPy's rule). strides in
 * elements, or NULL for C order. itemsize 0, or one that is no multiple of 4 for UCS4, fails with
 * JITEXPR_ERROR_ARGUMENT. */
typedef struct {
    const void* data;
    int32_t kind; /* a jitexpr_strings_kind */
    int32_t ndim;
    int64_t itemsize;
    const int64_t* shape;
    const int64_t* strides;
} jitexpr_strings;

/* One positional argument. Host scalars are kernel parameters and weakly typed (like Python
 * scalars: float32 array * 2.5 stays float32). */
typedef struct {
    int32_t kind; /* a jitexpr_arg_kind */
    union {
        const DLManagedTensor* tensor;
        const DLManagedTensorVersioned* tensor_versioned;
        const jitexpr_strings* strings;
        int32_t b;
        int64_t i;
        double f;
        double c[2];
        struct {
            const DLManagedTensor* tensor;
            int32_t dtype; /* a jitexpr_dtype */
        } temporal;
    } value;
} jitexpr_arg;

/* --- Evaluation ----------------------------------------------------------------------------- */

/* Evaluates `text` (NUL-terminated) with the arguments bound by name: args[i] is the value of
 * the variable names[i] (NUL-terminated). A name bound here shadows a named constant of the
 * same name (pi, e, inf, nan). Each name may appear once and must be one the program reads or
 * assigns (JITEXPR_ERROR_ARGUMENT otherwise). An assignment to a name bound to a tensor writes
 * into the tensor when the value has its dtype and shape; otherwise the name stands for the new
 * value in the rest of the program and the tensor is left as it was (the `strict_in_place`
 * call option writes into it whatever the value: same-kind cast and broadcast, else
 * JITEXPR_ERROR_TYPE / JITEXPR_ERROR_SHAPE). Tensors, results and failures as for
 * jitexpr_eval. */
int jitexpr_eval_named(jitexpr_runtime* rt, const char* text, size_t n_args, const char* const* names,
                       const jitexpr_arg* args, DLManagedTensor** out);

/* Evaluates `text` (NUL-terminated) with the arguments bound by position, in order of first
 * appearance of the names the program reads (as jit::eval; the named constants pi, e, inf and
 * nan are not parameters and stay constants). Tensors are borrowed: they are not
 * consumed, their deleters are not called, and they may be passed again. Their memory must be
 * on the runtime's backend and device (host memory for the CPU, the runtime's CUDA device:
 * DLPack's device_id; a tensor of another device fails with JITEXPR_ERROR_ARGUMENT, nothing
 * is copied between devices).
 * On success *out is a new DLPack tensor with the value of the last statement, ready to read
 * (on CUDA the work is complete when the call returns); the caller calls (*out)->deleter(*out).
 * A program whose last statement produces no value gives *out = NULL. On failure *out is NULL. */
int jitexpr_eval(jitexpr_runtime* rt, const char* text, size_t n_args, const jitexpr_arg* args, DLManagedTensor** out);
/* The same with tensor arguments only. */
int jitexpr_eval_dlpack(jitexpr_runtime* rt, const char* text, size_t n_args, DLManagedTensor* const* args,
                        DLManagedTensor** out);

/* --- Stopping a call, and per-call options ------------------------------------------------- */

/* A cancel token: the calls given it stop at their next safe point (between blocks of elements
 * on the CPU, between kernels on CUDA, between compiles) once it is cancelled, and fail with
 * JITEXPR_ERROR_CANCELLED. `poll`, when not NULL, is called with `user` on the calling thread
 * about every 20 ms while such a call works or waits; a nonzero result cancels the token (for
 * hosts that see their signals on one thread only). NULL on failure (out of memory). */
typedef struct jitexpr_cancel_token jitexpr_cancel_token;
jitexpr_cancel_token* jitexpr_cancel_token_create(int (*poll)(void* user), void* user);
void jitexpr_cancel_token_destroy(jitexpr_cancel_token* token); /* NULL is allowed; not while in use */
/* Only an atomic store: safe from any thread and in a signal handler. NULL is ignored. */
void jitexpr_cancel_token_cancel(jitexpr_cancel_token* token);
/* 1 when cancelled, 0 when not (or NULL). */
int jitexpr_cancel_token_cancelled(const jitexpr_cancel_token* token);
/* Clears the cancellation, for the next call. */
void jitexpr_cancel_token_reset(jitexpr_cancel_token* token);

/* Stops every call in flight on `rt` (calls started afterwards are unaffected). Safe from any
 * thread and in a signal handler. JITEXPR_ERROR_ARGUMENT for NULL. */
int jitexpr_cancel(jitexpr_runtime* rt);

/* Options of one call. Zero-initialise, then set `size` to sizeof(jitexpr_call_options): fields
 * added later are read only when `size` covers them. */
typedef struct {
    size_t size;
    jitexpr_cancel_token* cancel; /* NULL: only jitexpr_cancel stops the call */
    void* stream;                 /* CUDA: the CUstream to run on; NULL: the default stream */
    /* Nonzero: an assignment to a name bound to a tensor always writes into it (same-kind cast,
     * broadcast; JITEXPR_ERROR_TYPE / JITEXPR_ERROR_SHAPE when the value cannot be), instead of
     * rebinding the name when the value's dtype or shape differs. */
    int32_t strict_in_place;
} jitexpr_call_options;

/* jitexpr_eval with options (`options` NULL: as without). */
int jitexpr_eval_with(jitexpr_runtime* rt, const char* text, size_t n_args, const jitexpr_arg* args,
                      DLManagedTensor** out, const jitexpr_call_options* options);
/* jitexpr_eval_named with options (`options` NULL: as without). */
int jitexpr_eval_named_with(jitexpr_runtime* rt, const char* text, size_t n_args, const char* const* names,
                            const jitexpr_arg* args, DLManagedTensor** out, const jitexpr_call_options* options);

/* --- Kernels: parsed once, evaluated many times ----------------------------------------------- */

typedef struct jitexpr_kernel jitexpr_kernel;

/* Parses `text` now (syntax errors are reported here; names, an unknown function too, dtypes
 * and shapes at the first call). The kernel refers to `rt`, which must outlive it. NULL on
 * failure. */
jitexpr_kernel* jitexpr_compile(jitexpr_runtime* rt, const char* text);
void jitexpr_kernel_free(jitexpr_kernel* k); /* NULL is allowed */
/* The number of positional parameters, and the name of parameter i (NULL if out of range). */
size_t jitexpr_kernel_num_params(const jitexpr_kernel* k);
const char* jitexpr_kernel_param_name(const jitexpr_kernel* k, size_t i);
int jitexpr_kernel_call(const jitexpr_kernel* k, size_t n_args, const jitexpr_arg* args, DLManagedTensor** out);
int jitexpr_kernel_call_dlpack(const jitexpr_kernel* k, size_t n_args, DLManagedTensor* const* args,
                               DLManagedTensor** out);
/* jitexpr_kernel_call with options (`options` NULL: as without). */
int jitexpr_kernel_call_with(const jitexpr_kernel* k, size_t n_args, const jitexpr_arg* args, DLManagedTensor** out,
                             const jitexpr_call_options* options);
/* Calls the kernel with the arguments bound by name, as jitexpr_eval_named (and with options). */
int jitexpr_kernel_call_named(const jitexpr_kernel* k, size_t n_args, const char* const* names, const jitexpr_arg* args,
                              DLManagedTensor** out);
int jitexpr_kernel_call_named_with(const jitexpr_kernel* k, size_t n_args, const char* const* names,
                                   const jitexpr_arg* args, DLManagedTensor** out, const jitexpr_call_options* options);

/* --- Arrow columns, with nulls ---------------------------------------------------------------- */

/* Evaluates `text` over `n_columns` Arrow columns (the Arrow C data interface, <jit/arrow.h>)
 * bound by position as in jitexpr_eval, and propagates nulls: the result is null wherever any
 * input is null. Accepted columns: primitive formats c C s S i I l L e f g and b (boolean),
 * 2 buffers, no children or dictionary, host memory. The inputs are borrowed (not moved, not
 * released); they are read in place, booleans and validity bitmaps are unpacked into copies.
 * The program must be elementwise (a 1-D result of the columns' length), and must not assign
 * to the columns' names (Arrow buffers are immutable).
 * On success *out_array and *out_schema are new structures owned by the caller, who calls
 * out_array->release(out_array) and out_schema->release(out_schema) once each: the result in
 * host memory (shared with nothing the caller owns), its validity bitmap (NULL when there are
 * no nulls; null_count exact), format from the result dtype, name "". On failure both are
 * marked released (release == NULL). Unsupported formats, wrong buffer counts, columns of
 * other lengths, and results without an Arrow format (complex, bfloat16) are
 * JITEXPR_ERROR_ARGUMENT. */
int jitexpr_eval_arrow(jitexpr_runtime* rt, const char* text, size_t n_columns,
                       const struct ArrowSchema* const* schemas, const struct ArrowArray* const* arrays,
                       struct ArrowArray* out_array, struct ArrowSchema* out_schema);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* JITEXPR_C_API_H */
