//! What differs between the forms: how the packet, its length and the
//! ancillary fields are read, and what a filter's result becomes.

use isa::{AluOp, CallTarget, Cond, Endian, Insn as E, Operand, Reg, Size, Width};

use super::ops::size_of;
use super::{A, CTX, Dest, Form, TMP, Tr, X, alu32, alu64, mov32};
use crate::insn::ancillary;

/// `__sk_buff` field offsets the socket form reads.
mod skb {
    pub const LEN: i16 = 0;
    pub const PKT_TYPE: i16 = 4;
    pub const MARK: i16 = 8;
    pub const QUEUE_MAPPING: i16 = 12;
    pub const PROTOCOL: i16 = 16;
    pub const VLAN_PRESENT: i16 = 20;
    pub const VLAN_TCI: i16 = 24;
    pub const VLAN_PROTO: i16 = 28;
    pub const IFINDEX: i16 = 40;
    pub const HASH: i16 = 68;
}

/// `xdp_md` field offsets the XDP form reads.
mod xdp {
    pub const DATA: i16 = 0;
    pub const DATA_END: i16 = 4;
    pub const INGRESS_IFINDEX: i16 = 12;
    pub const RX_QUEUE_INDEX: i16 = 16;
    pub const DROP: i32 = 1;
    pub const PASS: i32 = 2;
}

/// The farthest a frame reaches (the verifier's packet offset bound).
const MAX_PACKET_OFF: u32 = 0xffff;

/// Helper ids.
const GET_PRANDOM_U32: i32 = 7;
const GET_SMP_PROCESSOR_ID: i32 = 8;

fn load_ctx(dst: Reg, off: i16) -> E {
    E::Load {
        size: Size::W,
        signed: false,
        dst,
        src: CTX,
        off,
    }
}

impl Tr<'_> {
    /// The filter's 0, as this form returns it.
    pub fn zero_value(&self) -> i32 {
        match self.form {
            Form::Socket => 0,
            Form::Xdp => xdp::DROP,
        }
    }

    pub fn ret_k(&mut self, k: u32) {
        let v = match self.form {
            Form::Socket => k as i32,
            Form::Xdp if k != 0 => xdp::PASS,
            Form::Xdp => xdp::DROP,
        };
        self.emit(mov32(A, Operand::Imm(v)));
        self.emit(E::Exit);
    }

    pub fn ret_a(&mut self) {
        if self.form == Form::Xdp {
            self.emit(E::Jmp {
                width: Width::W32,
                cond: Cond::Ne,
                dst: A,
                src: Operand::Imm(0),
                off: 2,
            });
            self.emit(mov32(A, Operand::Imm(xdp::DROP)));
            self.emit(E::Exit);
            self.emit(mov32(A, Operand::Imm(xdp::PASS)));
        }
        self.emit(E::Exit);
    }

    /// `dst = len`: the skb's length, or the frame's.
    pub fn len(&mut self, dst: Reg) {
        match self.form {
            Form::Socket => self.emit(load_ctx(dst, skb::LEN)),
            Form::Xdp => {
                self.emit(load_ctx(Reg::R2, xdp::DATA));
                self.emit(load_ctx(dst, xdp::DATA_END));
                self.emit(alu64(AluOp::Sub, dst, Operand::Reg(Reg::R2)));
                self.emit(mov32(dst, Operand::Reg(dst)));
            }
        }
    }

    /// `dst = ntoh(*(size *)(data + r1))` in the XDP form, where r1 holds
    /// a 64-bit offset bounded by `MAX_PACKET_OFF` or `off` a constant
    /// one; outside the frame, the filter's 0.
    fn xdp_load(&mut self, code: u16, dst: Reg, off: Option<u32>) {
        let (size, n) = size_of(code);
        self.emit(load_ctx(Reg::R2, xdp::DATA));
        self.emit(load_ctx(Reg::R3, xdp::DATA_END));
        let mut fixed = 0i16;
        match off {
            Some(k) if k <= i16::MAX as u32 - n => fixed = k as i16,
            Some(k) => self.emit(alu64(AluOp::Add, Reg::R2, Operand::Imm(k as i32))),
            None => self.emit(alu64(AluOp::Add, Reg::R2, Operand::Reg(Reg::R1))),
        }
        self.emit(alu64(AluOp::Mov, Reg::R1, Operand::Reg(Reg::R2)));
        self.emit(alu64(
            AluOp::Add,
            Reg::R1,
            Operand::Imm(i32::from(fixed) + n as i32),
        ));
        self.jump_if(
            Width::W64,
            Cond::Gt,
            Reg::R1,
            Operand::Reg(Reg::R3),
            Dest::Zero,
        );
        self.emit(E::Load {
            size,
            signed: false,
            dst,
            src: Reg::R2,
            off: fixed,
        });
        if n > 1 {
            self.emit(E::Endian {
                order: Endian::Be,
                bits: (n * 8) as u8,
                dst,
            });
        }
    }

    /// `A = P[k:n]`.
    pub fn load_abs(&mut self, code: u16, k: u32) -> Result<(), String> {
        match self.form {
            Form::Socket => self.emit(E::LdAbs {
                size: size_of(code).0,
                imm: k as i32,
            }),
            Form::Xdp => {
                let sk = k as i32;
                let off = if sk >= 0 {
                    k
                } else if sk >= ancillary::NET_OFF as i32 {
                    return Err(
                        "a load relative to the network header (SKF_NET_OFF): XDP does not know where it starts".into(),
                    );
                } else if sk >= ancillary::LL_OFF as i32 {
                    // The link-layer header is where the frame starts.
                    (sk - ancillary::LL_OFF as i32) as u32
                } else {
                    u32::MAX
                };
                if off.saturating_add(size_of(code).1) > MAX_PACKET_OFF {
                    // Never inside a frame: the filter's 0, as classic.
                    self.goto(Dest::Zero);
                } else {
                    self.xdp_load(code, A, Some(off));
                }
            }
        }
        Ok(())
    }

    /// `A = P[X + k:n]`.
    pub fn load_ind(&mut self, code: u16, k: u32) {
        match self.form {
            Form::Socket => self.emit(E::LdInd {
                size: size_of(code).0,
                src: X,
                imm: k as i32,
            }),
            Form::Xdp => {
                // The offset as a 32-bit signed sum, as `ld_ind` takes it.
                self.emit(mov32(Reg::R1, Operand::Reg(X)));
                self.emit(alu32(AluOp::Add, Reg::R1, Operand::Imm(k as i32)));
                // Bounded so that offset + size stays within what the
                // verifier tracks (no XDP frame reaches that far).
                self.jump_if(
                    Width::W64,
                    Cond::Gt,
                    Reg::R1,
                    Operand::Imm((MAX_PACKET_OFF - size_of(code).1) as i32),
                    Dest::Zero,
                );
                self.xdp_load(code, A, None);
            }
        }
    }

    /// `X = 4 * (P[k] & 0xf)`, A kept.
    pub fn msh(&mut self, k: u32) {
        match self.form {
            Form::Socket => {
                self.emit(alu64(AluOp::Mov, TMP, Operand::Reg(A)));
                self.emit(E::LdAbs {
                    size: Size::B,
                    imm: k as i32,
                });
                self.emit(alu32(AluOp::And, A, Operand::Imm(0xf)));
                self.emit(alu32(AluOp::Lsh, A, Operand::Imm(2)));
                self.emit(mov32(X, Operand::Reg(A)));
                self.emit(alu64(AluOp::Mov, A, Operand::Reg(TMP)));
            }
            Form::Xdp => {
                if k.saturating_add(1) > MAX_PACKET_OFF {
                    self.goto(Dest::Zero);
                    return;
                }
                self.xdp_load(crate::insn::size::B, X, Some(k));
                self.emit(alu32(AluOp::And, X, Operand::Imm(0xf)));
                self.emit(alu32(AluOp::Lsh, X, Operand::Imm(2)));
            }
        }
    }

    /// A = the ancillary field at `SKF_AD_OFF + off`; `Err(name)` where
    /// this form cannot read it.
    pub fn ancillary(&mut self, off: u32) -> Result<(), &'static str> {
        use ancillary::*;
        let name = |off| match off {
            PROTOCOL => "proto",
            PKTTYPE => "type",
            MARK => "mark",
            RXHASH => "rxhash",
            VLAN_TAG => "vlan_tci",
            VLAN_TAG_PRESENT => "vlan_avail",
            VLAN_TPID => "vlan_tpid",
            HATYPE => "hatype",
            PAY_OFFSET => "poff",
            NLATTR => "nla",
            NLATTR_NEST => "nlan",
            _ => "unknown",
        };
        let call = |id| E::Call(CallTarget::Helper(id));
        match (self.form, off) {
            (_, ALU_XOR_X) => self.emit(alu32(AluOp::Xor, A, Operand::Reg(X))),
            (_, CPU) => self.emit(call(GET_SMP_PROCESSOR_ID)),
            (_, RANDOM) => self.emit(call(GET_PRANDOM_U32)),
            (Form::Xdp, IFINDEX) => self.emit(load_ctx(A, xdp::INGRESS_IFINDEX)),
            (Form::Xdp, QUEUE) => self.emit(load_ctx(A, xdp::RX_QUEUE_INDEX)),
            (Form::Xdp, _) => return Err(name(off)),
            // `__sk_buff.protocol` and `vlan_proto` hold network order;
            // the classic loads give the value.
            (Form::Socket, PROTOCOL | VLAN_TPID) => {
                self.emit(load_ctx(
                    A,
                    if off == PROTOCOL {
                        skb::PROTOCOL
                    } else {
                        skb::VLAN_PROTO
                    },
                ));
                self.emit(E::Endian {
                    order: Endian::Be,
                    bits: 16,
                    dst: A,
                });
            }
            (Form::Socket, PKTTYPE) => self.emit(load_ctx(A, skb::PKT_TYPE)),
            (Form::Socket, IFINDEX) => self.emit(load_ctx(A, skb::IFINDEX)),
            (Form::Socket, MARK) => self.emit(load_ctx(A, skb::MARK)),
            (Form::Socket, QUEUE) => self.emit(load_ctx(A, skb::QUEUE_MAPPING)),
            (Form::Socket, RXHASH) => self.emit(load_ctx(A, skb::HASH)),
            (Form::Socket, VLAN_TAG) => self.emit(load_ctx(A, skb::VLAN_TCI)),
            (Form::Socket, VLAN_TAG_PRESENT) => self.emit(load_ctx(A, skb::VLAN_PRESENT)),
            (Form::Socket, _) => return Err(name(off)),
        }
        Ok(())
    }
}
