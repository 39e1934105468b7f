/* The C API on host DLPack tensors this program builds itself: evaluate an expression, reuse a
 * compiled kernel with a scalar parameter, and report an error with its caret. */
#include <jit/c_api.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A C-contiguous float32 matrix owned by this program, described for DLPack. Borrowed by
 * jitexpr calls, so no deleter is needed. */
typedef struct {
    float values[2 * 3];
    int64_t shape[2];
    DLManagedTensor tensor;
} Matrix;

static void matrix_init(Matrix* m, float first) {
    for (int i = 0; i < 6; ++i) m->values[i] = first + (float)i;
    m->shape[0] = 2;
    m->shape[1] = 3;
    memset(&m->tensor, 0, sizeof m->tensor);
    m->tensor.dl_tensor.data = m->values;
    m->tensor.dl_tensor.device.device_type = kDLCPU;
    m->tensor.dl_tensor.device.device_id = 0;
    m->tensor.dl_tensor.ndim = 2;
    m->tensor.dl_tensor.dtype.code = kDLFloat;
    m->tensor.dl_tensor.dtype.bits = 32;
    m->tensor.dl_tensor.dtype.lanes = 1;
    m->tensor.dl_tensor.shape = m->shape;
    m->tensor.dl_tensor.strides = NULL; /* C order */
}

static void print_result(const char* label, const DLManagedTensor* t) {
    const DLTensor* d = &t->dl_tensor;
    const float* v = (const float*)((const char*)d->data + d->byte_offset);
    int64_t n = 1;
    for (int k = 0; k < d->ndim; ++k) n *= d->shape[k];
    printf("%s:", label);
    for (int64_t i = 0; i < n; ++i) printf(" %g", v[i]);
    printf("\n");
}

static int fail(const char* what) {
    fprintf(stderr, "c_api_demo: %s failed (%s error):\n%s\n", what, jitexpr_status_name(jitexpr_last_error_code()),
            jitexpr_last_error());
    return 1;
}

int main(void) {
    /* The examples run as tests on the CPU backend. */
    jitexpr_runtime* rt = jitexpr_runtime_create(JITEXPR_BACKEND_CPU);
    if (!rt) return fail("jitexpr_runtime_create");

    Matrix a, b;
    matrix_init(&a, 1.0f); /* 1 2 3 / 4 5 6 */
    matrix_init(&b, 10.0f);

    /* One-off evaluation, tensors bound in order of first appearance. */
    DLManagedTensor* args[2] = {&a.tensor, &b.tensor};
    DLManagedTensor* c = NULL;
    if (jitexpr_eval_dlpack(rt, "c = a * 2 + b", 2, args, &c) != JITEXPR_OK) return fail("eval");
    print_result("a * 2 + b", c);
    const float* cv = (const float*)((const char*)c->dl_tensor.data + c->dl_tensor.byte_offset);
    int ok = cv[0] == 12.0f && cv[5] == 27.0f;
    c->deleter(c);

    /* A kernel parsed once, called with different scalar values (no recompilation). */
    jitexpr_kernel* k = jitexpr_compile(rt, "where(a > t, a, t)");
    if (!k) return fail("compile");
    for (double t = 2; t <= 4; t += 2) {
        jitexpr_arg kargs[2];
        kargs[0].kind = JITEXPR_ARG_TENSOR;
        kargs[0].value.tensor = &a.tensor;
        kargs[1].kind = JITEXPR_ARG_FLOAT;
        kargs[1].value.f = t;
        DLManagedTensor* r = NULL;
        if (jitexpr_kernel_call(k, 2, kargs, &r) != JITEXPR_OK) return fail("kernel call");
        char label[64];
        snprintf(label, sizeof label, "max(a, %g)", t);
        print_result(label, r);
        r->deleter(r);
    }
    jitexpr_kernel_free(k);

    /* Errors: a code, and the message with the caret under the offending text. */
    DLManagedTensor* bad = NULL;
    int rc = jitexpr_eval_dlpack(rt, "c = a +* b", 2, args, &bad);
    printf("error %d (%s):\n%s\n", rc, jitexpr_status_name(rc), jitexpr_last_error());
    ok = ok && rc == JITEXPR_ERROR_PARSE && bad == NULL;

    jitexpr_stats s;
    if (jitexpr_runtime_stats(rt, &s) == JITEXPR_OK)
        printf("prepared programs: %llu, cache hits: %llu\n", (unsigned long long)s.misses, (unsigned long long)s.hits);
    jitexpr_runtime_destroy(rt);
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
