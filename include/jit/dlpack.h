/* jitexpr — the DLPack exchange structures (C ABI), written from the DLPack specification
 * (https://dmlc.github.io/dlpack/latest/c_api.html), layout of DLPack 0.8 (ABI version 1).
 *
 * If another copy of these definitions (dlpack/dlpack.h) is included first, that one is used:
 * both describe the same ABI, so tensors pass between libraries unchanged. */
#ifndef JITEXPR_DLPACK_H
#define JITEXPR_DLPACK_H

#ifndef DLPACK_EXTERN_C
#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif
#endif

#ifndef DLPACK_VERSION /* not defined yet by the reference header */

#include <stddef.h>
#include <stdint.h>

#define DLPACK_VERSION 80
#define DLPACK_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* Where the memory of a tensor lives. The values are fixed by the specification. */
typedef enum {
    kDLCPU = 1,      /* host memory */
    kDLCUDA = 2,     /* CUDA device memory */
    kDLCUDAHost = 3, /* pinned host memory (cudaMallocHost) */
    kDLOpenCL = 4,
    kDLVulkan = 7,
    kDLMetal = 8,
    kDLVPI = 9,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLExtDev = 12,
    kDLCUDAManaged = 13, /* CUDA managed (unified) memory */
    kDLOneAPI = 14,
    kDLWebGPU = 15,
    kDLHexagon = 16
} DLDeviceType;

typedef struct {
    DLDeviceType device_type;
    int32_t device_id; /* the device ordinal; 0 for host memory */
} DLDevice;

/* Kinds of element. */
typedef enum {
    kDLInt = 0U,
    kDLUInt = 1U,
    kDLFloat = 2U,
    kDLOpaqueHandle = 3U,
    kDLBfloat = 4U,
    kDLComplex = 5U, /* bits counts both parts: complex64 is 64 */
    kDLBool = 6U     /* bits 8: one byte per element, 0 or 1 */
} DLDataTypeCode;

typedef struct {
    uint8_t code;   /* a DLDataTypeCode */
    uint8_t bits;   /* bits of one lane */
    uint16_t lanes; /* 1 for scalar elements */
} DLDataType;

/* A view of strided memory. Not owning. */
typedef struct {
    void* data; /* base pointer (a device pointer for device memory) */
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t* shape;       /* ndim extents */
    int64_t* strides;     /* ndim strides in elements, or NULL for C order (row-major, compact) */
    uint64_t byte_offset; /* bytes from data to element (0, ..., 0) */
} DLTensor;

/* A tensor with its owner: the consumer calls deleter(self) once when done with it. */
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void* manager_ctx;                             /* the producer's own state */
    void (*deleter)(struct DLManagedTensor* self); /* may be NULL */
} DLManagedTensor;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DLPACK_VERSION */

/* DLPack 1.x: the versioned managed tensor, with read-only and copied flags (what Python's
 * `__dlpack__(max_version=(1, 0))` hands out, in capsules named "dltensor_versioned"). Skipped
 * when a reference header of DLPack 1.x came first. */
#ifndef DLPACK_FLAG_BITMASK_READ_ONLY
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef struct {
    uint32_t major;
    uint32_t minor;
} DLPackVersion;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

typedef struct DLManagedTensorVersioned {
    DLPackVersion version; /* 1.x */
    void* manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned* self); /* may be NULL */
    uint64_t flags;                                         /* DLPACK_FLAG_BITMASK_* */
    DLTensor dl_tensor;
} DLManagedTensorVersioned;
#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* DLPACK_FLAG_BITMASK_READ_ONLY */
#endif /* JITEXPR_DLPACK_H */
