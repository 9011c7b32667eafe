//! The verifier's stack limit, checked on the scheduler's own BPF object
//! (OUT_DIR/bpf.bpf.o, as build.rs compiled it) with a margin.
//!
//! The verifier (kernel/bpf/verifier.c, check_max_stack_depth()) walks
//! every bpf-to-bpf call of a program and refuses it when the stack of a
//! call chain, each function's depth rounded up to 16 bytes with the JIT,
//! exceeds MAX_BPF_STACK (512). A function's depth there is the deepest
//! stack slot it touches on the paths it explores; here it is the deepest
//! slot its code touches at all, which is never less, so the chains below
//! are upper bounds of the verifier's. On 6.16 they are exact: its refusal
//! of the enqueue() chain before this test existed ("combined stack size
//! of 6 calls is 528") is what this computes for that build. A different
//! clang spills differently: the margin keeps the load from failing there.

use std::collections::{BTreeMap, BTreeSet};

use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget, SectionIndex, SymbolKind};

/// MAX_BPF_STACK, include/linux/filter.h.
const STACK_LIMIT: u32 = 512;
/// Bytes each program must leave unused (issue 47).
const STACK_MARGIN: u32 = 64;
/// round_up_stack_depth() with the JIT requested, as on every kernel we
/// test (CONFIG_BPF_JIT=y); the interpreter's 32 applies only without it.
const JIT_ROUND: u32 = 16;

const OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bpf.bpf.o"));

/// One BPF function: where it is and what it does with the stack.
#[derive(Debug, Default)]
struct Func {
    /// Deepest stack byte touched, counted down from the frame pointer.
    depth: u32,
    /// Functions it calls (bpf-to-bpf).
    calls: BTreeSet<String>,
    /// In a program section (struct_ops/..., tp_btf/...), not .text.
    entry: bool,
}

/// The deepest stack byte that @code (BPF instructions) touches through
/// r10, directly or through a register that holds r10 plus a constant
/// (`rX = r10; rX += -N`, how a stack object's address is taken).
fn frame_depth(code: &[u8]) -> u32 {
    let mut fp_off: [Option<i64>; 11] = [None; 11];
    fp_off[10] = Some(0);
    let mut depth = 0i64;
    let mut deepest = |off: i64| depth = depth.max(-off);
    let mut i = 0;
    while i + 8 <= code.len() {
        let insn = &code[i..i + 8];
        let (op, dst, src) = (insn[0], (insn[1] & 0xf) as usize, (insn[1] >> 4) as usize);
        let off = i16::from_le_bytes([insn[2], insn[3]]) as i64;
        let imm = i32::from_le_bytes([insn[4], insn[5], insn[6], insn[7]]) as i64;
        i += 8;
        if dst > 10 || src > 10 {
            continue;
        }
        match op & 0x7 {
            // BPF_LDX: dst = *(src + off).
            0x1 => {
                if let Some(k) = fp_off[src] {
                    deepest(k + off);
                }
                fp_off[dst] = None;
            }
            // BPF_ST, BPF_STX (atomics too): *(dst + off) = ...
            0x2 | 0x3 => {
                if let Some(k) = fp_off[dst] {
                    deepest(k + off);
                }
                if op & 0xe0 == 0xc0 {
                    // An atomic with BPF_FETCH writes back to src.
                    fp_off[src] = None;
                }
            }
            // BPF_ALU64: mov and add of constants keep track of r10 + k.
            0x7 => {
                fp_off[dst] = match op {
                    0xbf => fp_off[src],
                    0x07 => fp_off[dst].map(|k| k + imm),
                    _ => None,
                };
                if let Some(k) = fp_off[dst] {
                    deepest(k);
                }
            }
            // BPF_ALU (32-bit): no stack address survives it.
            0x4 => fp_off[dst] = None,
            // BPF_LD: ld_imm64 takes two slots.
            0x0 => {
                fp_off[dst] = None;
                if op == 0x18 {
                    i += 8;
                }
            }
            // BPF_JMP: a call clobbers r0-r5.
            0x5 if op == 0x85 => fp_off[..6].fill(None),
            _ => {}
        }
    }
    depth.max(0) as u32
}

/// Every function of the object, by name, with its bpf-to-bpf calls
/// resolved as libbpf does: a call relocated against a function names it;
/// one against a section symbol (.text) goes to imm + 1 instructions past
/// that symbol; one without a relocation is relative to itself.
fn functions(data: &[u8]) -> BTreeMap<String, Func> {
    let file = object::File::parse(data).expect("parsing the BPF object");
    // (section index, byte offset) -> (function name, size).
    let mut at = BTreeMap::new();
    let mut funcs = BTreeMap::new();
    for sym in file.symbols() {
        let Some(sec) = sym.section_index() else {
            continue;
        };
        if sym.kind() != SymbolKind::Text || sym.size() == 0 {
            continue;
        }
        let name = sym.name().unwrap().to_string();
        let section = file.section_by_index(sec).unwrap();
        let code = section.data().unwrap();
        let (start, end) = (
            sym.address() as usize,
            (sym.address() + sym.size()) as usize,
        );
        at.insert((sec.0, sym.address()), (name.clone(), sym.size()));
        let func = Func {
            depth: frame_depth(&code[start..end]),
            calls: BTreeSet::new(),
            entry: section.name().unwrap() != ".text",
        };
        funcs.insert(name, func);
    }
    let name_at =
        |sec: SectionIndex, off: i64| at.get(&(sec.0, off as u64)).map(|(n, _)| n.clone());
    for ((sec, start), (name, size)) in &at {
        let section = file.section_by_index(SectionIndex(*sec)).unwrap();
        let code = section.data().unwrap();
        let relocs: BTreeMap<u64, _> = section.relocations().collect();
        for pc in (*start..start + size).step_by(8) {
            let insn = &code[pc as usize..pc as usize + 8];
            // BPF_JMP | BPF_CALL with src_reg BPF_PSEUDO_CALL.
            if insn[0] != 0x85 || insn[1] >> 4 != 1 {
                continue;
            }
            let imm = i32::from_le_bytes([insn[4], insn[5], insn[6], insn[7]]) as i64;
            let target = match relocs.get(&pc).map(|r| r.target()) {
                Some(RelocationTarget::Symbol(idx)) => {
                    let sym = file.symbol_by_index(idx).unwrap();
                    match (sym.kind(), sym.section_index()) {
                        // An extern: a kfunc, which libbpf makes a kfunc call.
                        (_, None) => continue,
                        (SymbolKind::Text, _) => Some(sym.name().unwrap().to_string()),
                        (_, Some(s)) => name_at(s, sym.address() as i64 + (imm + 1) * 8),
                    }
                }
                Some(_) => None,
                None => name_at(SectionIndex(*sec), pc as i64 + (imm + 1) * 8),
            };
            let target = target.unwrap_or_else(|| panic!("{name}: call at {pc} unresolved"));
            funcs.get_mut(name).unwrap().calls.insert(target);
        }
    }
    funcs
}

fn round_up(depth: u32) -> u32 {
    depth.div_ceil(JIT_ROUND) * JIT_ROUND
}

/// The deepest chain of calls from @name: its stack and the functions.
fn deepest(
    funcs: &BTreeMap<String, Func>,
    name: &str,
    seen: &mut Vec<String>,
) -> (u32, Vec<String>) {
    seen.push(name.to_string());
    let mut best = (0, Vec::new());
    for callee in &funcs[name].calls {
        if !seen.contains(callee) {
            best = best.max(deepest(funcs, callee, seen));
        }
    }
    seen.pop();
    let mut chain = vec![name.to_string()];
    chain.extend(best.1);
    (round_up(funcs[name].depth) + best.0, chain)
}

#[test]
fn every_program_leaves_a_stack_margin() {
    let funcs = functions(OBJECT);
    let mut short = Vec::new();
    let entries: Vec<_> = funcs
        .iter()
        .filter(|(_, f)| f.entry)
        .map(|(n, _)| n.clone())
        .collect();
    assert!(
        entries.iter().any(|n| n == "cadence_enqueue"),
        "no programs found: {entries:?}"
    );
    for name in entries {
        let (stack, chain) = deepest(&funcs, &name, &mut Vec::new());
        let chain: Vec<_> = chain
            .iter()
            .map(|f| format!("{f}({})", funcs[f].depth))
            .collect();
        println!(
            "{name}: {stack} of {STACK_LIMIT} bytes, margin {}: {}",
            STACK_LIMIT - stack.min(STACK_LIMIT),
            chain.join(" > ")
        );
        if stack + STACK_MARGIN > STACK_LIMIT {
            short.push(format!("{name} ({stack} bytes: {})", chain.join(" > ")));
        }
    }
    assert!(
        short.is_empty(),
        "under {STACK_MARGIN} bytes of stack margin: {short:#?}"
    );
}

/// The frame reading on hand-made instructions: a store below r10, a
/// stack address taken with mov and add and passed on, and a load.
#[test]
fn frame_depth_follows_r10_and_its_copies() {
    let insn = |op: u8, dst: u8, src: u8, off: i16, imm: i32| {
        let mut v = vec![op, dst | (src << 4)];
        v.extend(off.to_le_bytes());
        v.extend(imm.to_le_bytes());
        v
    };
    // *(u64 *)(r10 - 8) = r1
    let store = insn(0x7b, 10, 1, -8, 0);
    assert_eq!(frame_depth(&store), 8);
    // r2 = r10; r2 += -40; call 1 (r2 is the helper's stack argument)
    let addr = [
        insn(0xbf, 2, 10, 0, 0),
        insn(0x07, 2, 0, 0, -40),
        insn(0x85, 0, 0, 0, 1),
    ]
    .concat();
    assert_eq!(frame_depth(&addr), 40);
    // r3 = r10; r3 += -16; r0 = *(u64 *)(r3 - 8): 24 deep
    let load = [
        insn(0xbf, 3, 10, 0, 0),
        insn(0x07, 3, 0, 0, -16),
        insn(0x79, 0, 3, -8, 0),
    ]
    .concat();
    assert_eq!(frame_depth(&load), 24);
    // A 32-bit write ends the tracking: w3 = 0; *(u64 *)(r3 - 100) = r1 is no stack access.
    let lost = [
        insn(0xbf, 3, 10, 0, 0),
        insn(0xb4, 3, 0, 0, 0),
        insn(0x7b, 3, 1, -100, 0),
    ]
    .concat();
    assert_eq!(frame_depth(&lost), 0);
}
