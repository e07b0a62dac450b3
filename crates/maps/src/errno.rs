use std::fmt;

/// A Linux error number, as map operations and helpers return it
/// (helpers return it negated).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Errno(pub i32);

impl Errno {
    pub const EPERM: Errno = Errno(1);
    pub const ENOENT: Errno = Errno(2);
    pub const E2BIG: Errno = Errno(7);
    pub const EAGAIN: Errno = Errno(11);
    pub const ENOMEM: Errno = Errno(12);
    pub const EFAULT: Errno = Errno(14);
    pub const EACCES: Errno = Errno(13);
    pub const EBUSY: Errno = Errno(16);
    pub const EEXIST: Errno = Errno(17);
    pub const ENODEV: Errno = Errno(19);
    pub const EINVAL: Errno = Errno(22);
    pub const ENOSPC: Errno = Errno(28);
    pub const EOPNOTSUPP: Errno = Errno(95);

    pub fn name(self) -> &'static str {
        match self.0 {
            1 => "EPERM",
            2 => "ENOENT",
            7 => "E2BIG",
            11 => "EAGAIN",
            12 => "ENOMEM",
            13 => "EACCES",
            14 => "EFAULT",
            16 => "EBUSY",
            17 => "EEXIST",
            19 => "ENODEV",
            22 => "EINVAL",
            28 => "ENOSPC",
            95 => "EOPNOTSUPP",
            _ => "E?",
        }
    }

    /// The value a helper returns for this error: `-errno` as u64.
    pub fn to_helper_ret(self) -> u64 {
        (-i64::from(self.0)) as u64
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), -self.0)
    }
}

impl std::error::Error for Errno {}
