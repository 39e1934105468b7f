/* Consumer of the installed package (C API): exits 0 when the result is right and a syntax
 * error is reported with its code. */
#include <jit/c_api.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    double a[3] = {1, 2, 3};
    int64_t shape[1] = {3};
    DLManagedTensor t;
    memset(&t, 0, sizeof t);
    t.dl_tensor.data = a;
    t.dl_tensor.device.device_type = kDLCPU;
    t.dl_tensor.ndim = 1;
    t.dl_tensor.dtype.code = kDLFloat;
    t.dl_tensor.dtype.bits = 64;
    t.dl_tensor.dtype.lanes = 1;
    t.dl_tensor.shape = shape;

    jitexpr_runtime* rt = jitexpr_runtime_create(JITEXPR_BACKEND_CPU);
    if (!rt) {
        fprintf(stderr, "consumer_c: %s\n", jitexpr_last_error());
        return 1;
    }
    DLManagedTensor* args[1] = {&t};
    DLManagedTensor* out = NULL;
    int rc = jitexpr_eval_dlpack(rt, "x * x + 1", 1, args, &out);
    int ok = rc == JITEXPR_OK && out && out->dl_tensor.ndim == 1;
    if (ok) {
        const double* r = (const double*)((const char*)out->dl_tensor.data + out->dl_tensor.byte_offset);
        ok = r[0] == 2 && r[1] == 5 && r[2] == 10;
        out->deleter(out);
    }
    ok = ok && jitexpr_eval_dlpack(rt, "x +", 1, args, &out) == JITEXPR_ERROR_PARSE &&
         strstr(jitexpr_last_error(), "^") != NULL;
    jitexpr_runtime_destroy(rt);
    printf("consumer_c (jitexpr %s): %s\n", jitexpr_version(), ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
