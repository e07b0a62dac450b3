//! `BPF_PROG_TEST_RUN`: one packet through a loaded program in the kernel,
//! with its verdict, output bytes and context.

use std::os::fd::RawFd;

use crate::error::{Error, Result};

/// `BPF_F_TEST_XDP_LIVE_FRAMES`: frames are really sent (redirected, TXed).
pub const F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;

/// What the kernel returned for one run.
#[derive(Clone, Debug, Default)]
pub struct RunOutput {
    pub retval: u32,
    /// The packet after the program (from `data` to `data_end`).
    pub data: Vec<u8>,
    /// The context after the program (`struct xdp_md`, `struct __sk_buff`).
    pub ctx: Vec<u8>,
    /// Nanoseconds per run, as the kernel measured them.
    pub duration_ns: u32,
}

/// One input.
#[derive(Clone, Debug, Default)]
pub struct RunInput<'a> {
    pub data: &'a [u8],
    pub ctx: Option<&'a [u8]>,
    /// Bytes of context to read back (0: none).
    pub ctx_out: usize,
    pub repeat: u32,
    pub flags: u32,
    pub batch_size: u32,
    /// Read the output packet back.
    pub data_out: bool,
}

/// Room for the output packet: the kernel reports ENOSPC when its packet
/// grew past the buffer, so leave room for the largest growth.
const OUT_ROOM: usize = 65_536 + 4096;

pub fn run(prog_fd: RawFd, input: &RunInput<'_>) -> Result<RunOutput> {
    // SAFETY: plain old data; zero is valid for every field.
    let mut opts: libbpf_sys::bpf_test_run_opts = unsafe { std::mem::zeroed() };
    opts.sz = std::mem::size_of_val(&opts) as _;
    opts.data_in = input.data.as_ptr().cast();
    opts.data_size_in = input.data.len() as u32;
    let mut data_out = if input.data_out {
        vec![0u8; input.data.len() + OUT_ROOM]
    } else {
        Vec::new()
    };
    if input.data_out {
        opts.data_out = data_out.as_mut_ptr().cast();
        opts.data_size_out = data_out.len() as u32;
    }
    if let Some(ctx) = input.ctx {
        opts.ctx_in = ctx.as_ptr().cast();
        opts.ctx_size_in = ctx.len() as u32;
    }
    let mut ctx_out = vec![0u8; input.ctx_out];
    if input.ctx_out > 0 {
        opts.ctx_out = ctx_out.as_mut_ptr().cast();
        opts.ctx_size_out = ctx_out.len() as u32;
    }
    opts.repeat = input.repeat as _;
    opts.flags = input.flags;
    opts.batch_size = input.batch_size;
    // SAFETY: every pointer in `opts` points into a live buffer of the size
    // given beside it.
    let ret = unsafe { libbpf_sys::bpf_prog_test_run_opts(prog_fd, &mut opts) };
    if ret < 0 {
        return Err(Error::errno("BPF_PROG_TEST_RUN", -ret));
    }
    data_out.truncate(opts.data_size_out as usize);
    ctx_out.truncate(opts.ctx_size_out as usize);
    Ok(RunOutput {
        retval: opts.retval,
        data: data_out,
        ctx: ctx_out,
        duration_ns: opts.duration,
    })
}
