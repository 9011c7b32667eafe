// Compiles wakelat.bpf.c into OUT_DIR/bpf_skel.rs with the headers and
// vmlinux.h that scx_cargo ships; $BPF_CLANG must be clang >= 16.
fn main() {
    scx_cargo::BpfBuilder::new()
        .expect("no usable clang >= 16: export BPF_CLANG=clang-19")
        .enable_skel("wakelat.bpf.c", "bpf")
        .build()
        .expect("building wakelat.bpf.c failed");
}
