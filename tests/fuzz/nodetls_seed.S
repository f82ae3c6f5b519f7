/*
 * A seed for fuzz_elf and test_nodetls, built as a shared library: the
 * shapes in which Debian's libtorch_cpu reaches its autograd
 * thread-locals (docs/autograd-tls.md), for user/python/nodetls.c to
 * decode on a machine without those libraries. Never run.
 */
	.section .tbss,"awT",@nobits
	.align 8
tls_node:	.zero 8
tls_ctr:	.zero 8
tls_tid:	.zero 8

	.bss
	.align 8
slot:	.zero 8

	.text
/* the c10::ThreadLocal's accessor: the variable's address */
accessor:
	endbr64
	sub $8, %rsp
	leaq tls_node@tlsld(%rip), %rdi
	call __tls_get_addr@PLT
	leaq tls_node@dtpoff(%rax), %rax
	add $8, %rsp
	ret

/* the static initializer that puts the accessor in its slot */
init:
	endbr64
	leaq accessor(%rip), %rax
	movq %rax, slot(%rip)
	ret
	.section .init_array,"aw"
	.align 8
	.quad init

	.text
	.globl _ZN5torch8autograd4Node13assign_parentEv
	.type _ZN5torch8autograd4Node13assign_parentEv, @function
_ZN5torch8autograd4Node13assign_parentEv:
	endbr64
	push %rbx
	call *slot(%rip)
	pop %rbx
	ret

	.size _ZN5torch8autograd4Node13assign_parentEv, .-_ZN5torch8autograd4Node13assign_parentEv
	.globl _ZN2at15sequence_number4peekEv
	.type _ZN2at15sequence_number4peekEv, @function
_ZN2at15sequence_number4peekEv:
	endbr64
	sub $8, %rsp
	leaq tls_ctr@tlsld(%rip), %rdi
	call __tls_get_addr@PLT
	movq tls_ctr@dtpoff(%rax), %rax
	add $8, %rsp
	ret

	.size _ZN2at15sequence_number4peekEv, .-_ZN2at15sequence_number4peekEv
	.globl _ZN2at15sequence_number17get_and_incrementEv
	.type _ZN2at15sequence_number17get_and_incrementEv, @function
_ZN2at15sequence_number17get_and_incrementEv:
	endbr64
	xor %eax, %eax
	ret

	.size _ZN2at15sequence_number17get_and_incrementEv, .-_ZN2at15sequence_number17get_and_incrementEv
	.globl _ZN2at14RecordFunction15currentThreadIdEv
	.type _ZN2at14RecordFunction15currentThreadIdEv, @function
_ZN2at14RecordFunction15currentThreadIdEv:
	endbr64
	sub $8, %rsp
	leaq tls_tid@tlsld(%rip), %rdi
	call __tls_get_addr@PLT
	movq %rax, %rdx
	movq tls_tid@dtpoff(%rax), %rax
	add $8, %rsp
	ret

	.size _ZN2at14RecordFunction15currentThreadIdEv, .-_ZN2at14RecordFunction15currentThreadIdEv
/* CopySlices(), torch 1.13's: the inlined Node() sets two fields */
	.globl _ZN5torch8autograd10CopySlicesC1ERKN2at6TensorENS2_14TensorGeometryESt8functionIFS3_S5_EESt10shared_ptrINS0_4NodeEE
	.type _ZN5torch8autograd10CopySlicesC1ERKN2at6TensorENS2_14TensorGeometryESt8functionIFS3_S5_EESt10shared_ptrINS0_4NodeEE, @function
_ZN5torch8autograd10CopySlicesC1ERKN2at6TensorENS2_14TensorGeometryESt8functionIFS3_S5_EESt10shared_ptrINS0_4NodeEE:
	endbr64
	push %rbx
	mov %rdi, %rbx
	call _ZN2at15sequence_number17get_and_incrementEv@PLT
	mov %rax, 0x18(%rbx)
	call _ZN2at14RecordFunction15currentThreadIdEv@PLT
	mov %rax, 0x30(%rbx)
	pop %rbx
	ret
	.size _ZN5torch8autograd10CopySlicesC1ERKN2at6TensorENS2_14TensorGeometryESt8functionIFS3_S5_EESt10shared_ptrINS0_4NodeEE, .-_ZN5torch8autograd10CopySlicesC1ERKN2at6TensorENS2_14TensorGeometryESt8functionIFS3_S5_EESt10shared_ptrINS0_4NodeEE
	/* the decoder reads 96 bytes of a function, 512 of a constructor */
	.skip 640, 0xcc
	.section .note.GNU-stack,"",@progbits
