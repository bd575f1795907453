// The playground's stand-in for <assert.h> and <cassert> (gpu/nvidia/standins.go): NVRTC has the
// device-side assert built in; for clang, assert calls __assertfail as CUDA's does (the virtual GPU
// reports a failed assertion as a fault). NDEBUG turns it off. Written for this project.
#if defined(NDEBUG)
#undef assert
#define assert(e) ((void)0)
#elif !defined(assert)
extern "C" __device__ void __assertfail(const char* message, const char* file, unsigned int line, const char* function,
                                        __SIZE_TYPE__ charSize);
#define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, sizeof(char)))
#endif
