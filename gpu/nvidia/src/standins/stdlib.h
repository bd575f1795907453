// The playground's stand-in for <stdlib.h>, <cstdlib> and <sys/types.h> (gpu/nvidia/standins.go):
// their functions serve host code, which the GPU compilers leave out; kept are the short type
// names glibc's <sys/types.h> gives through them (uint, ushort, ulong), which kernels use, and
// EXIT_SUCCESS, EXIT_FAILURE and RAND_MAX. Written for this project.
#ifndef __PG_STDLIB_H
#define __PG_STDLIB_H
typedef unsigned int uint;
typedef unsigned short ushort;
typedef unsigned long ulong;
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define RAND_MAX 2147483647
#endif
