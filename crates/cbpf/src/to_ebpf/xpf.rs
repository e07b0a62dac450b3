//! xPF in eBPF: the banks, the indexed mode and the budget. The
//! persistent bank is a value of map 0 (an array of the instance's
//! blocks), found once per packet through map 1 (a one-entry array holding
//! the active block's index, read through its direct value address) and
//! kept on the stack; a body that loops counts its instructions in r9.

use isa::{AluOp, CallTarget, Cond, Insn as E, Lddw, Operand, Reg, Size, Width};
use maps::{MapSpec, MapType};
use obj::{MapDef, MapOrigin, Object, Program, ProgramKind, XdpAttach};

use super::ops::slot;
use super::{A, COUNT, Dest, Form, Tr, TranslateError, alu64, mov32};
use crate::insn::{Insn, MEMWORDS, class, op, xpf};
use crate::xpf::{Bank, XpfOptions};

/// Where the active block's address is kept.
const BLOCK_PTR: i16 = -(4 * MEMWORDS as i16) - 8;
/// The map key slot for the lookup.
const KEY: i16 = BLOCK_PTR - 4;
/// The packet's time (`bpf_ktime_get_ns`, read once).
const TIME: i16 = KEY - 12;
const KTIME_GET_NS: i32 = 5;
const NS_PER_SEC: i32 = 1_000_000_000;
const MAP_LOOKUP_ELEM: i32 = 1;

/// An xPF program in eBPF, with the maps it names (`lddw` map indices).
#[derive(Clone, Debug)]
pub struct XpfProgram {
    pub insns: Vec<E>,
    pub form: Form,
    pub options: XpfOptions,
}

impl XpfProgram {
    /// The instance's blocks: `blocks` values of `4 * words` bytes.
    pub fn memory_map(&self) -> MapSpec {
        MapSpec::new(
            "xpf_memory",
            MapType::Array,
            4,
            4 * self.options.words,
            self.options.blocks,
        )
    }

    /// The active block's index (a `u32`, which the program reads), then
    /// user space's bookkeeping (4 bytes of padding, the allocated blocks'
    /// bits as a `u64`), so that another process can take it up.
    pub fn active_map(&self) -> MapSpec {
        MapSpec::new("xpf_active", MapType::Array, 4, 16, 1)
    }

    /// The program as an object every sluice backend loads: a tc
    /// classifier (socket form) or an XDP program, named `name`, with the
    /// two maps.
    pub fn object(&self, name: &str) -> Object {
        let def = |spec| MapDef {
            spec,
            origin: MapOrigin::Btf,
            pin_by_name: false,
            inner: None,
            initial: vec![],
            data: None,
            key_type: None,
            value_type: None,
        };
        let (kind, section) = match self.form {
            Form::Socket => (ProgramKind::SchedCls, "tc"),
            Form::Xdp => (
                ProgramKind::Xdp {
                    attach: XdpAttach::Device,
                    frags: false,
                },
                "xdp",
            ),
        };
        Object {
            license: "GPL".into(),
            kernel_version: None,
            maps: vec![def(self.memory_map()), def(self.active_map())],
            programs: vec![Program {
                name: name.into(),
                section: section.into(),
                kind,
                insns: self.insns.clone(),
                functions: vec![(name.into(), 0)],
                lines: vec![],
                kfuncs: vec![],
                core_relocations: 0,
                core_poisoned: vec![],
                type_given: true,
                attach_type: None,
            }],
            btf: None,
            core_target: None,
        }
    }
}

/// The eBPF program of an xPF filter for an instance of `opts` (checked
/// first), in `form`.
pub fn translate_xpf(
    prog: &[Insn],
    opts: &XpfOptions,
    form: Form,
) -> Result<XpfProgram, TranslateError> {
    let shape = crate::xpf::shape_of(prog, opts)?;
    let insns = Tr {
        form,
        xpf: Some((&shape, *opts)),
        out: Vec::new(),
    }
    .run(prog)?;
    Ok(XpfProgram {
        insns,
        form,
        options: *opts,
    })
}

impl Tr<'_> {
    /// Zeroes the scratch bank, finds the active block and starts the count.
    pub fn xpf_prologue(&mut self) {
        let Some((shape, _)) = self.xpf else {
            return;
        };
        for i in 1..=(MEMWORDS as i16 / 2) {
            self.emit(E::Store {
                size: Size::DW,
                dst: Reg::R10,
                off: -8 * i,
                src: Operand::Imm(0),
            });
        }
        if shape.persistent {
            self.emit(E::Lddw {
                dst: Reg::R1,
                value: Lddw::MapIdxValue { idx: 1, off: 0 },
            });
            self.emit(E::Load {
                size: Size::W,
                signed: false,
                dst: Reg::R1,
                src: Reg::R1,
                off: 0,
            });
            self.emit(E::Store {
                size: Size::W,
                dst: Reg::R10,
                off: KEY,
                src: Operand::Reg(Reg::R1),
            });
            self.emit(E::Lddw {
                dst: Reg::R1,
                value: Lddw::MapIdx(0),
            });
            self.emit(alu64(AluOp::Mov, Reg::R2, Operand::Reg(Reg::R10)));
            self.emit(alu64(AluOp::Add, Reg::R2, Operand::Imm(i32::from(KEY))));
            self.emit(E::Call(CallTarget::Helper(MAP_LOOKUP_ELEM)));
            self.jump_if(Width::W64, Cond::Eq, A, Operand::Imm(0), Dest::Zero);
            self.emit(E::Store {
                size: Size::DW,
                dst: Reg::R10,
                off: BLOCK_PTR,
                src: Operand::Reg(A),
            });
        }
        if shape.time {
            // One reading per packet: both time loads see the same instant.
            self.emit(E::Call(CallTarget::Helper(KTIME_GET_NS)));
            self.emit(E::Store {
                size: Size::DW,
                dst: Reg::R10,
                off: TIME,
                src: Operand::Reg(A),
            });
        }
        if shape.loops {
            self.emit(mov32(COUNT, Operand::Imm(0)));
        }
    }

    /// A = the packet's time in whole seconds or the nanoseconds after.
    pub fn time_load(&mut self, k: u32) {
        self.emit(E::Load {
            size: Size::DW,
            signed: false,
            dst: A,
            src: Reg::R10,
            off: TIME,
        });
        let op = if k == xpf::TIME_SEC {
            AluOp::Div
        } else {
            AluOp::Mod
        };
        self.emit(alu64(op, A, Operand::Imm(NS_PER_SEC)));
        self.emit(mov32(A, Operand::Reg(A)));
    }

    /// For a looping xPF body: at each block's first instruction, the
    /// block's length (a block runs whole unless the filter ends in it).
    pub fn xpf_blocks(&self, prog: &[Insn]) -> Vec<Option<u32>> {
        let Some((shape, _)) = self.xpf.filter(|(s, _)| s.loops) else {
            return Vec::new();
        };
        let n = prog.len();
        let end = shape.handler.unwrap_or(n);
        let mut leader = vec![false; n + 1];
        leader[0] = true;
        leader[end] = true;
        for (pc, p) in prog.iter().enumerate().take(end) {
            match p.class() {
                class::JMP if p.code == class::JMP | op::JA => {
                    leader[crate::xpf::ja_target(pc, p.k, n).expect("checked")] = true;
                    leader[pc + 1] = true;
                }
                class::JMP => {
                    leader[pc + 1 + usize::from(p.jt)] = true;
                    leader[pc + 1 + usize::from(p.jf)] = true;
                    leader[pc + 1] = true;
                }
                class::RET => leader[pc + 1] = true,
                _ => {}
            }
        }
        let mut blocks = vec![None; n];
        let mut pc = 0;
        while pc < end {
            let next = (pc + 1..=end).find(|&i| leader[i]).unwrap_or(end);
            blocks[pc] = Some((next - pc) as u32);
            pc = next;
        }
        blocks
    }

    /// Before a backward `ja`: over budget, to the handler.
    pub fn budget_check(&mut self) {
        let budget = self.xpf.map_or(0, |(_, o)| o.budget);
        self.jump_if(
            Width::W64,
            Cond::Gt,
            COUNT,
            Operand::Imm(budget as i32),
            Dest::Handler,
        );
    }

    /// r2 = the active block's address, plus `add` bytes.
    fn block_address(&mut self, add: Option<Reg>) {
        self.emit(E::Load {
            size: Size::DW,
            signed: false,
            dst: Reg::R2,
            src: Reg::R10,
            off: BLOCK_PTR,
        });
        if let Some(r) = add {
            self.emit(alu64(AluOp::Add, Reg::R2, Operand::Reg(r)));
        }
    }

    fn word(&mut self, reg: Reg, store: bool, base: Reg, off: i16) {
        self.emit(if store {
            E::Store {
                size: Size::W,
                dst: base,
                off,
                src: Operand::Reg(reg),
            }
        } else {
            E::Load {
                size: Size::W,
                signed: false,
                dst: reg,
                src: base,
                off,
            }
        });
    }

    /// `M[k]` of the persistent bank (`k` below its words: checked).
    pub fn persistent(&mut self, reg: Reg, store: bool, k: u32) {
        self.block_address(None);
        let bytes = 4 * k;
        if bytes <= i16::MAX as u32 {
            self.word(reg, store, Reg::R2, bytes as i16);
        } else {
            self.emit(alu64(AluOp::Add, Reg::R2, Operand::Imm(bytes as i32)));
            self.word(reg, store, Reg::R2, 0);
        }
    }

    /// `M[x + k]` of `bank`; outside it, the filter's 0.
    pub fn indexed(&mut self, bank: Bank, reg: Reg, store: bool, k: u32) {
        let words = match bank {
            Bank::Scratch => MEMWORDS,
            Bank::Persistent => self.xpf.map_or(MEMWORDS, |(_, o)| o.words),
        };
        // r1 = X + k without wrapping, then bounded by the bank.
        self.emit(mov32(Reg::R1, Operand::Reg(super::X)));
        self.emit(mov32(Reg::R2, Operand::Imm(k as i32)));
        self.emit(alu64(AluOp::Add, Reg::R1, Operand::Reg(Reg::R2)));
        self.jump_if(
            Width::W64,
            Cond::Ge,
            Reg::R1,
            Operand::Imm(words as i32),
            Dest::Zero,
        );
        self.emit(alu64(AluOp::Lsh, Reg::R1, Operand::Imm(2)));
        match bank {
            Bank::Persistent => self.block_address(Some(Reg::R1)),
            Bank::Scratch => {
                self.emit(alu64(AluOp::Mov, Reg::R2, Operand::Reg(Reg::R10)));
                self.emit(alu64(AluOp::Add, Reg::R2, Operand::Imm(i32::from(slot(0)))));
                self.emit(alu64(AluOp::Add, Reg::R2, Operand::Reg(Reg::R1)));
            }
        }
        self.word(reg, store, Reg::R2, 0);
    }
}
