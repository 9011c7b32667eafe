#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""
Runs in the guest for bench/insncount.sh, as root: every loaded BPF
program's JIT-compiled image and where each of its source lines starts in
it, from bpf(2) itself (Debian 12's bpftool cannot disassemble: no
libbfd). One JSON object per program, one per line of stdout:

  {"id", "name", "ksyms": [address of each (sub)program], "lens": [its
   length], "image": hex of the jited image (the subprograms back to back,
   in ksyms' order), "lines": [[jited address, file, line], ...]}

bench/bpf_lines.py disassembles the image on the host and weighs each line
by the instructions the insncount plugin counted there.
"""
import ctypes
import json
import os
import struct

NR_BPF = 321  # x86-64
BPF_PROG_GET_NEXT_ID = 11
BPF_PROG_GET_FD_BY_ID = 13
BPF_OBJ_GET_INFO_BY_FD = 15
BPF_BTF_GET_FD_BY_ID = 19

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

# struct bpf_prog_info's fields used here: (byte offset, format), from
# include/uapi/linux/bpf.h (the layout is append-only).
INFO = {
    "jited_prog_len": (16, "I"),
    "jited_prog_insns": (24, "Q"),
    "name": (64, "16s"),
    "nr_jited_ksyms": (104, "I"),
    "nr_jited_func_lens": (108, "I"),
    "jited_ksyms": (112, "Q"),
    "jited_func_lens": (120, "Q"),
    "btf_id": (128, "I"),
    "nr_line_info": (148, "I"),
    "line_info": (152, "Q"),
    "jited_line_info": (160, "Q"),
    "nr_jited_line_info": (168, "I"),
    "line_info_rec_size": (172, "I"),
    "jited_line_info_rec_size": (176, "I"),
}
INFO_SIZE = 232


def bpf(cmd, attr):
    r = libc.syscall(NR_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))
    if r < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return r


def next_id(start):
    attr = ctypes.create_string_buffer(struct.pack("II", start, 0), 16)
    try:
        bpf(BPF_PROG_GET_NEXT_ID, attr)
    except OSError:
        return None
    return struct.unpack_from("II", attr.raw)[1]


def fd_by_id(cmd, ident):
    attr = ctypes.create_string_buffer(struct.pack("I", ident), 16)
    return bpf(cmd, attr)


def obj_info(fd, buf):
    """bpf_obj_get_info_by_fd() into @buf (a ctypes buffer)."""
    attr = ctypes.create_string_buffer(
        struct.pack("IIQ", fd, ctypes.sizeof(buf), ctypes.addressof(buf)), 16)
    bpf(BPF_OBJ_GET_INFO_BY_FD, attr)


def get(buf, field):
    off, fmt = INFO[field]
    return struct.unpack_from(fmt, buf.raw, off)[0]


def put(buf, field, value):
    off, fmt = INFO[field]
    struct.pack_into(fmt, buf, off, value)


def btf_strings(btf_id):
    """The string section of BTF object @btf_id."""
    fd = fd_by_id(BPF_BTF_GET_FD_BY_ID, btf_id)
    try:
        # struct bpf_btf_info: btf (u64), btf_size (u32), id (u32), ...
        info = ctypes.create_string_buffer(64)
        obj_info(fd, info)
        size = struct.unpack_from("I", info.raw, 8)[0]
        data = ctypes.create_string_buffer(size)
        info = ctypes.create_string_buffer(64)
        struct.pack_into("QI", info, 0, ctypes.addressof(data), size)
        obj_info(fd, info)
    finally:
        os.close(fd)
    # struct btf_header: magic, version, flags, hdr_len, type_off,
    # type_len, str_off, str_len.
    _, _, _, hdr_len, _, _, str_off, str_len = struct.unpack_from("HBBIIIII", data.raw, 0)
    return data.raw[hdr_len + str_off:hdr_len + str_off + str_len]


def string_at(strings, off):
    end = strings.index(b"\0", off)
    return strings[off:end].decode()


def program(ident):
    fd = fd_by_id(BPF_PROG_GET_FD_BY_ID, ident)
    try:
        info = ctypes.create_string_buffer(INFO_SIZE)
        obj_info(fd, info)
        n_img, n_ks = get(info, "jited_prog_len"), get(info, "nr_jited_ksyms")
        n_fl, n_li = get(info, "nr_jited_func_lens"), get(info, "nr_line_info")
        n_jli = get(info, "nr_jited_line_info")
        li_size, jli_size = get(info, "line_info_rec_size"), get(info, "jited_line_info_rec_size")
        if not n_img:
            return None
        image = ctypes.create_string_buffer(n_img)
        ksyms = ctypes.create_string_buffer(8 * max(n_ks, 1))
        lens = ctypes.create_string_buffer(4 * max(n_fl, 1))
        lines = ctypes.create_string_buffer(max(li_size * n_li, 1))
        jlines = ctypes.create_string_buffer(max(jli_size * n_jli, 1))
        want = ctypes.create_string_buffer(INFO_SIZE)
        # Each array: its count field, its count, its pointer field, its buffer.
        for nr, n, ptr, buf in (("jited_prog_len", n_img, "jited_prog_insns", image),
                                ("nr_jited_ksyms", n_ks, "jited_ksyms", ksyms),
                                ("nr_jited_func_lens", n_fl, "jited_func_lens", lens),
                                ("nr_line_info", n_li, "line_info", lines),
                                ("nr_jited_line_info", n_jli, "jited_line_info", jlines)):
            put(want, nr, n)
            put(want, ptr, ctypes.addressof(buf))
        put(want, "line_info_rec_size", li_size)
        put(want, "jited_line_info_rec_size", jli_size)
        obj_info(fd, want)
    finally:
        os.close(fd)
    strings = btf_strings(get(info, "btf_id")) if n_li and get(info, "btf_id") else b""
    out_lines = []
    # struct bpf_line_info: insn_off, file_name_off, line_off, line_col
    # (line << 10 | col); jited_line_info[i] is where line_info[i] starts.
    for i in range(min(n_li, n_jli)):
        _, file_off, _, line_col = struct.unpack_from("IIII", lines.raw, i * li_size)
        addr = struct.unpack_from("Q", jlines.raw, i * jli_size)[0]
        out_lines.append([addr, os.path.basename(string_at(strings, file_off)), line_col >> 10])
    return {
        "id": ident,
        "name": get(info, "name").rstrip(b"\0").decode(),
        "ksyms": list(struct.unpack_from("%dQ" % n_ks, ksyms.raw)),
        "lens": list(struct.unpack_from("%dI" % n_fl, lens.raw)),
        "image": image.raw.hex(),
        "lines": out_lines,
    }


def main():
    ident = 0
    while True:
        ident = next_id(ident)
        if ident is None:
            break
        try:
            p = program(ident)
        except OSError:
            continue
        if p:
            print(json.dumps(p))


if __name__ == "__main__":
    main()
