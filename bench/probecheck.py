#!/usr/bin/python3
"""Print the probed byte of functions as a running process sees them.

Usage: probecheck.py PID LIBRARY SYMBOL...

For each SYMBOL (a dynamic symbol of LIBRARY), find where LIBRARY is
mapped in PID and read the byte where memtrace-bpf puts its uprobe from
/proc/PID/mem: the function's first, or the one after its endbr64 (as
mt_elf_probe_point places it in c10's reporters of torch 1.13 and 2.6,
which the benches run; torch 2.14's go further, user/proc/probepoint.h).
An attached uprobe on the int3 path shows 0xcc
there; without one the function's own byte shows.  Output, one line per
symbol:

    <symbol> byte=0x<hh> int3=<yes|no>
"""

import struct
import sys

ENDBR64 = b"\xf3\x0f\x1e\xfa"


def dynsym_values(path, wanted):
    """st_value of each wanted dynamic symbol, and the PT_LOAD segments."""
    with open(path, "rb") as f:
        elf = f.read()
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise SystemExit(f"{path}: not a 64-bit ELF file")
    e_phoff, e_shoff = struct.unpack_from("<QQ", elf, 0x20)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from(
        "<HHHH", elf, 0x36)
    loads = []
    for i in range(e_phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", elf, e_phoff + i * e_phentsize)
        if p_type == 1:  # PT_LOAD
            loads.append((p_vaddr, p_offset, p_filesz))
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, e_shoff + i * e_shentsize)
                for i in range(e_shnum)]
    found = {}
    for sh in sections:
        if sh[1] != 11:  # SHT_DYNSYM
            continue
        strtab = sections[sh[6]]
        str_off = strtab[4]
        for j in range(sh[5] // sh[9]):
            st_name, _, _, _, st_value, _ = struct.unpack_from(
                "<IBBHQQ", elf, sh[4] + j * sh[9])
            end = elf.index(b"\0", str_off + st_name)
            name = elf[str_off + st_name:end].decode()
            if name in wanted and st_value:
                found[name] = st_value
    return found, loads


def dynsym_offsets(path):
    """{file offset: name} of every defined dynamic function symbol."""
    with open(path, "rb") as f:
        elf = f.read()
    e_phoff, e_shoff = struct.unpack_from("<QQ", elf, 0x20)
    e_phentsize, e_phnum, e_shentsize, e_shnum = struct.unpack_from(
        "<HHHH", elf, 0x36)
    loads = []
    for i in range(e_phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", elf, e_phoff + i * e_phentsize)
        if p_type == 1:
            loads.append((p_vaddr, p_offset, p_filesz))
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, e_shoff + i * e_shentsize)
                for i in range(e_shnum)]
    out = {}
    for sh in sections:
        if sh[1] != 11:
            continue
        str_off = sections[sh[6]][4]
        for j in range(sh[5] // sh[9]):
            st_name, st_info, _, _, st_value, _ = struct.unpack_from(
                "<IBBHQQ", elf, sh[4] + j * sh[9])
            if not st_value or (st_info & 0xf) != 2:  # STT_FUNC
                continue
            end = elf.index(b"\0", str_off + st_name)
            try:
                off = file_offset(st_value, loads)
            except SystemExit:
                continue
            out.setdefault(off, elf[str_off + st_name:end].decode())
    return out


def file_offset(vaddr, loads):
    for p_vaddr, p_offset, p_filesz in loads:
        if p_vaddr <= vaddr < p_vaddr + p_filesz:
            return vaddr - p_vaddr + p_offset
    raise SystemExit(f"0x{vaddr:x} is in no PT_LOAD segment")


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    pid, lib, syms = sys.argv[1], sys.argv[2], sys.argv[3:]
    values, loads = dynsym_values(lib, set(syms))
    maps = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5] == lib:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                maps.append((lo, hi, int(parts[2], 16)))
    with open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for s in syms:
            if s not in values:
                raise SystemExit(f"{lib}: no dynamic symbol {s}")
            off = file_offset(values[s], loads)
            addr = next((lo + off - moff for lo, hi, moff in maps
                         if moff <= off < moff + (hi - lo)), None)
            if addr is None:
                raise SystemExit(f"pid {pid}: {s} is not mapped")
            mem.seek(addr)
            head = mem.read(5)
            b = head[4] if head[:4] == ENDBR64 else head[0]
            print(f"{s} byte=0x{b:02x} int3={'yes' if b == 0xcc else 'no'}")


if __name__ == "__main__":
    main()
