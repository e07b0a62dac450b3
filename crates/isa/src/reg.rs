use std::fmt;

/// One of the eleven eBPF registers, `r0` to `r10`.
///
/// `r0` holds return values, `r1`-`r5` carry call arguments, `r6`-`r9` are
/// preserved across calls and `r10` is the read-only frame pointer.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Reg(u8);

impl Reg {
    pub const R0: Reg = Reg(0);
    pub const R1: Reg = Reg(1);
    pub const R2: Reg = Reg(2);
    pub const R3: Reg = Reg(3);
    pub const R4: Reg = Reg(4);
    pub const R5: Reg = Reg(5);
    pub const R6: Reg = Reg(6);
    pub const R7: Reg = Reg(7);
    pub const R8: Reg = Reg(8);
    pub const R9: Reg = Reg(9);
    pub const R10: Reg = Reg(10);
    /// The frame pointer.
    pub const FP: Reg = Reg::R10;
    /// Number of registers.
    pub const COUNT: usize = 11;

    /// The register numbered `n`, if there is one.
    pub const fn new(n: u8) -> Option<Reg> {
        if n <= 10 { Some(Reg(n)) } else { None }
    }

    pub const fn number(self) -> u8 {
        self.0
    }

    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for Reg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%r{}", self.0)
    }
}
