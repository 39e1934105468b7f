/* The manylinux wheels' extension (JITEXPR_PY_MANYLINUX, scripts/build-wheels.sh): a build on a
 * newer system than the wheel's tag (manylinux_2_34: glibc 2.34, the libstdc++ of GCC 11) binds a
 * few functions to symbol versions that such a system lacks, although each also exists there at
 * an older version. The module is linked with -Wl,--wrap=NAME for each, so that every reference to
 * NAME goes to __wrap_NAME below, which calls NAME at its older version (.symver):
 *   std::condition_variable::wait(unique_lock<mutex>&)  GLIBCXX_3.4.30 (GCC 12) -> GLIBCXX_3.4.11:
 *     GCC 12 added a version that lets pthread_cancel unwind through the wait; jitexpr never
 *     cancels a thread, and the waits are otherwise the same;
 *   hypot, hypotf  GLIBC_2.35 -> GLIBC_2.2.5: the same results; glibc 2.35 dropped the SVID error
 *     handling (_LIB_VERSION) from the new versions, which a program has no way to select any more.
 * auditwheel refuses a wheel that still needs a version newer than the tag's, so a new such
 * function shows up at the build. */

__asm__(".symver jx_cv_wait_old, _ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE@GLIBCXX_3.4.11");
void jx_cv_wait_old(void* cv, void* lock);
void __wrap__ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE(void* cv, void* lock);
void __wrap__ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE(void* cv, void* lock) {
    jx_cv_wait_old(cv, lock);
}

__asm__(".symver jx_hypot_old, hypot@GLIBC_2.2.5");
double jx_hypot_old(double x, double y);
double __wrap_hypot(double x, double y);
double __wrap_hypot(double x, double y) { return jx_hypot_old(x, y); }

__asm__(".symver jx_hypotf_old, hypotf@GLIBC_2.2.5");
float jx_hypotf_old(float x, float y);
float __wrap_hypotf(float x, float y);
float __wrap_hypotf(float x, float y) { return jx_hypotf_old(x, y); }
