/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The CUDA stand-in's libraries (user/standin, built by `make standin`),
 * carried in the binary so that a dry run needs nothing but memtrace-bpf
 * on the host or in the container. The assembler finds each file on its
 * include path (-I the stand-in's output folder); dryrun/standin.c names
 * the bounds below.
 */
#define LIB(sym, file)                        \
	.section .rodata.mt_standin, "a";     \
	.balign 64;                           \
	.globl sym##_start, sym##_end;        \
	sym##_start:                          \
	.incbin file;                         \
	sym##_end:

LIB(mt_lib_cuda, "libcuda.so.1")
LIB(mt_lib_cudart, "libcudart.so.12")
LIB(mt_lib_cublas, "libcublas.so.12")
LIB(mt_lib_cublaslt, "libcublasLt.so.12")
LIB(mt_lib_nvml, "libnvidia-ml.so.1")
LIB(mt_lib_cudnn, "libcudnn.so.9")

	.section .note.GNU-stack, "", @progbits
