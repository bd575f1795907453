// The playground's stand-in for <stddef.h> and <cstddef> (gpu/nvidia/standins.go): size_t and
// ptrdiff_t (which both compilers have built in), NULL and offsetof. Written for this project.
#ifndef __PG_STDDEF_H
#define __PG_STDDEF_H
#ifndef NULL
#define NULL __null
#endif
#if !defined(offsetof) && defined(__clang__)
#define offsetof(type, member) __builtin_offsetof(type, member)
#elif !defined(offsetof)
#define offsetof(type, member) ((size_t) & (((type*)0)->member))
#endif
#ifdef __cplusplus
namespace std {
using ::size_t;
using ::ptrdiff_t;
typedef decltype(nullptr) nullptr_t;
}
#endif
#endif
