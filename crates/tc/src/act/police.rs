//! `police`: the kernel's `act_police.c`, a token bucket policer. Tokens
//! are nanoseconds of transmission time at the rate, up to the burst;
//! each packet of at most `mtu` bytes costs its length's time, and
//! conforms (the conform control, default `pass`) if the bucket (and the
//! peak-rate bucket, and the packet-rate bucket) stays at or above zero;
//! otherwise it exceeds (the exceed control, default `reclassify`),
//! counted as an overlimit, and as a drop when that control is `drop`.
//! Time is the packet's: `Skb::tstamp`, in nanoseconds.

use serde_json::{Value, json};

use super::{
    ActionHead, ActionStats, control_json, duparg, invarg, next, sprint_rate, sprint_size,
};
use crate::control::{Control, parse_control};
use crate::error::TcError;

/// `/proc/net/psched`'s ticks per microsecond as iproute2 reads it on a
/// current kernel (1000/64).
const TICK_IN_USEC: f64 = 15.625;
/// `PSCHED_SHIFT`: a tick is 64 ns.
const PSCHED_SHIFT: u32 = 6;

/// `struct psched_ratecfg`: a rate as the kernel turns lengths into time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateCfg {
    /// Bytes (or packets) per second.
    pub rate: u64,
    mult: u32,
    shift: u8,
    pub overhead: u16,
    pub mpu: u32,
    pub atm: bool,
}

impl RateCfg {
    /// `psched_ratecfg_precompute`.
    pub fn new(rate: u64, overhead: u16, mpu: u32, atm: bool) -> RateCfg {
        let (mut mult, mut shift) = (1u32, 0u8);
        if rate > 0 {
            let mut factor: u64 = 1_000_000_000;
            loop {
                mult = factor.checked_div(rate).unwrap_or(0) as u32;
                if mult & (1 << 31) != 0 || factor & (1 << 63) != 0 {
                    break;
                }
                factor <<= 1;
                shift += 1;
            }
        }
        RateCfg {
            rate,
            mult,
            shift,
            overhead,
            mpu,
            atm,
        }
    }

    /// `psched_l2t_ns`: the time `len` bytes take.
    pub fn l2t_ns(&self, len: u32) -> i64 {
        let mut len = len.wrapping_add(u32::from(self.overhead));
        if len < self.mpu {
            len = self.mpu;
        }
        let len = if self.atm {
            u64::from(len.div_ceil(48) * 53)
        } else {
            u64::from(len)
        };
        ((len * u64::from(self.mult)) >> self.shift) as i64
    }
}

/// iproute2's `tc_calc_xmittime`: ticks to send `size` at `rate`.
pub fn xmittime(rate: u64, size: u64) -> u32 {
    if rate == 0 {
        return u32::MAX;
    }
    let usec = (1e6 * (size as f64 / rate as f64)) as u32;
    (f64::from(usec) * TICK_IN_USEC) as u32
}

/// iproute2's `tc_calc_xmitsize`: what `ticks` send at `rate`.
pub fn xmitsize(rate: u64, ticks: u32) -> u32 {
    let usec = (f64::from(ticks) / TICK_IN_USEC) as u32;
    ((rate as f64 * f64::from(usec)) / 1e6) as u32
}

/// A policer's parameters and bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Police {
    pub rate: Option<RateCfg>,
    pub peak: Option<RateCfg>,
    /// Packets per second (`pkts_rate`).
    pub pps: Option<RateCfg>,
    /// `tc_police.burst`: the bucket in ticks.
    pub burst: u32,
    /// The packet bucket in ticks (`pkts_burst`).
    pub pkt_burst: u32,
    /// The largest conforming packet (the kernel's `tcfp_mtu`).
    pub mtu: u32,
    /// The control of a packet that conforms (`TCA_POLICE_RESULT`).
    pub conform: Control,
    pub overhead: u16,
    pub atm: bool,
    toks: i64,
    ptoks: i64,
    pkttoks: i64,
    t_c: u64,
}

impl Police {
    fn burst_ns(&self) -> i64 {
        i64::from(self.burst) << PSCHED_SHIFT
    }

    fn pkt_burst_ns(&self) -> i64 {
        i64::from(self.pkt_burst) << PSCHED_SHIFT
    }

    fn mtu_ptoks(&self) -> i64 {
        self.peak.map_or(0, |p| p.l2t_ns(self.mtu))
    }

    /// A full bucket, as `tcf_police_init` leaves it.
    fn fill(&mut self) {
        self.toks = self.burst_ns();
        self.ptoks = self.mtu_ptoks();
        self.pkttoks = self.pkt_burst_ns();
        self.t_c = 0;
    }

    /// `tcf_police_act` for a packet of `len` bytes at `now` (ns);
    /// `exceed` is the action's control.
    pub fn act(&mut self, len: u64, now: u64, exceed: Control, stats: &mut ActionStats) -> Control {
        let len = u32::try_from(len).unwrap_or(u32::MAX);
        let mut ret = exceed;
        if len <= self.mtu {
            if self.rate.is_none() && self.pps.is_none() {
                return self.conform;
            }
            let elapsed = i64::try_from(now.saturating_sub(self.t_c)).unwrap_or(i64::MAX);
            let mut toks = elapsed.min(self.burst_ns());
            let (mut ptoks, mut ppstoks) = (0i64, 0i64);
            if let Some(peak) = self.peak {
                ptoks = (toks + self.ptoks).min(self.mtu_ptoks()) - peak.l2t_ns(len);
            }
            if let Some(rate) = self.rate {
                toks = (toks + self.toks).min(self.burst_ns()) - rate.l2t_ns(len);
            } else if let Some(pps) = self.pps {
                ppstoks = elapsed.min(self.pkt_burst_ns()) + self.pkttoks;
                ppstoks = ppstoks.min(self.pkt_burst_ns()) - pps.l2t_ns(1);
            }
            if (toks | ptoks | ppstoks) >= 0 {
                self.t_c = now;
                self.toks = toks;
                self.ptoks = ptoks;
                self.pkttoks = ppstoks;
                ret = self.conform;
                if ret == Control::SHOT {
                    stats.drops += 1;
                }
                return ret;
            }
        }
        stats.overlimits += 1;
        if ret == Control::SHOT {
            stats.drops += 1;
        }
        ret
    }
}

/// `police ...` (`words[0]` is `police`): the policer, its exceed
/// control, and the words taken, as iproute2's `act_parse_police`.
pub fn parse(words: &[&str]) -> Result<(Police, Control, usize), TcError> {
    let mut exceed = Control::Act(runtime::TcAction::Reclassify);
    let mut conform = Control::OK;
    let (mut rate, mut peak, mut pps, mut pps_burst) = (0u64, 0u64, 0u64, 0u64);
    let (mut buffer, mut mtu, mut mpu, mut overhead) = (0u32, 0u32, 0u32, 0u16);
    let (mut rcell, mut atm) = (None, false);
    let mut ok = 0;
    let mut i = 1;
    while let Some(&w) = words.get(i) {
        match w {
            "burst" | "buffer" | "maxburst" => {
                let v = next(words, i)?;
                if buffer != 0 {
                    return Err(duparg("buffer/burst", v));
                }
                let (b, cell) = super::parse_size_and_cell(v).ok_or_else(|| invarg("buffer", v))?;
                (buffer, rcell) = (b, cell);
                i += 2;
            }
            "mtu" | "minburst" => {
                let v = next(words, i)?;
                if mtu != 0 {
                    return Err(duparg("mtu/minburst", v));
                }
                mtu = super::parse_size_and_cell(v)
                    .ok_or_else(|| invarg("mtu", v))?
                    .0;
                i += 2;
            }
            "mpu" => {
                let v = next(words, i)?;
                mpu = super::parse_size(v).ok_or_else(|| invarg("mpu", v))?;
                i += 2;
            }
            "rate" | "peakrate" => {
                let v = next(words, i)?;
                let slot = if w == "rate" { &mut rate } else { &mut peak };
                if *slot != 0 {
                    return Err(duparg(w, v));
                }
                *slot = super::parse_rate(v).ok_or_else(|| invarg(w, v))?;
                i += 2;
            }
            "avrate" => {
                return Err(
                    "police: \"avrate\" needs a rate estimator (tc's \"estimator\"), \
                            which sluice does not keep"
                        .into(),
                );
            }
            "conform-exceed" => {
                let v = next(words, i)?;
                let (e, c) = v.split_once('/').map_or((v, None), |(e, c)| (e, Some(c)));
                let one = |s: &str| {
                    parse_control(&[s]).map(|(c, _)| c).ok_or_else(|| {
                        format!("police: conform-exceed \"{v}\": bad control \"{s}\"")
                    })
                };
                exceed = one(e)?;
                if let Some(c) = c {
                    conform = one(c)?;
                }
                i += 2;
            }
            "overhead" => {
                let v = next(words, i)?;
                overhead = v.parse().map_err(|_| invarg("overhead", v))?;
                i += 2;
            }
            "linklayer" => {
                let v = next(words, i)?;
                atm = match v {
                    "ethernet" => false,
                    "atm" | "adsl" => true,
                    _ => return Err(invarg("linklayer", v)),
                };
                i += 2;
            }
            "pkts_rate" | "pkts_burst" => {
                let v = next(words, i)?;
                let slot = if w == "pkts_rate" {
                    &mut pps
                } else {
                    &mut pps_burst
                };
                if *slot != 0 {
                    return Err(duparg(w, v));
                }
                *slot = super::parse_u64(v).ok_or_else(|| invarg(w, v))?;
                i += 2;
            }
            "help" => return Err("police: help is not taken here".into()),
            _ => match parse_control(&words[i..]) {
                Some((c, used)) => {
                    exceed = c;
                    i += used;
                }
                None => break,
            },
        }
        ok += 1;
    }
    if ok == 0 {
        return Err("police: nothing to police (rate, avrate, mtu or pkts_rate)".into());
    }
    if rate == 0 && mtu == 0 && pps == 0 {
        return Err("'rate' or 'avrate' or 'mtu' or 'pkts_rate' MUST be specified.".into());
    }
    if rate != 0 && buffer == 0 {
        return Err("'burst' requires 'rate'.".into());
    }
    if pps != 0 && pps_burst == 0 {
        return Err("'pkts_burst' requires 'pkts_rate'.".into());
    }
    if pps != 0 && rate != 0 {
        return Err("'rate' and 'pkts_rate' are not allowed in same action.".into());
    }
    if peak != 0 {
        if rate == 0 {
            return Err("'peakrate' requires 'rate'.".into());
        }
        if mtu == 0 {
            return Err("'mtu' is required, if 'peakrate' is requested.".into());
        }
    }
    // The kernel's mtu without one: 255 cells of the rate table's cell
    // (iproute2 sizes the cell for a 2047-byte mtu), or no limit.
    let kmtu = if mtu != 0 {
        mtu
    } else if rate != 0 {
        let cell_log = rcell.unwrap_or_else(|| {
            let mut c = 0;
            while (2047u32 >> c) > 255 {
                c += 1;
            }
            c
        });
        255u32 << cell_log
    } else {
        u32::MAX
    };
    let mut p = Police {
        rate: (rate != 0).then(|| RateCfg::new(rate, overhead, mpu, atm)),
        peak: (peak != 0).then(|| RateCfg::new(peak, overhead, mpu, atm)),
        pps: (pps != 0).then(|| RateCfg::new(pps, 0, 0, false)),
        burst: if rate != 0 {
            xmittime(rate, u64::from(buffer))
        } else {
            0
        },
        pkt_burst: if pps != 0 {
            xmittime(pps, pps_burst)
        } else {
            0
        },
        mtu: kmtu,
        conform,
        overhead,
        atm,
        toks: 0,
        ptoks: 0,
        pkttoks: 0,
        t_c: 0,
    };
    p.fill();
    Ok((p, exceed, i))
}

/// The text after `action order N: ` (`print_police`).
pub fn text(a: ActionHead, p: &Police) -> String {
    let rate = p.rate.map_or(0, |r| r.rate);
    let mut s = format!(
        " police 0x{:x} rate {} burst {} mtu {} ",
        a.index,
        sprint_rate(rate),
        sprint_size(xmitsize(rate, p.burst)),
        sprint_size(p.mtu)
    );
    if let Some(pk) = p.peak {
        s += &format!("peakrate {} ", sprint_rate(pk.rate));
    }
    if let Some(pps) = p.pps {
        s += &format!(
            "pkts_rate {} pkts_burst {} ",
            pps.rate,
            xmitsize(pps.rate, p.pkt_burst)
        );
    }
    s += &format!("action {}", a.control.name());
    if p.conform != Control::OK {
        s += &format!("/{} ", p.conform.name());
    } else {
        s += " ";
    }
    s += &format!("overhead {} ", sprint_size(u32::from(p.overhead)));
    if p.atm {
        s += "linklayer atm ";
    }
    s + &format!("\n\tref {} bind {} ", a.refs, a.binds)
}

/// Its `tc -j` fields (tc prints `control_action` twice for a conform
/// control; JSON cannot: the conform one is `conform_action` here).
pub fn json(a: ActionHead, p: &Police, o: &mut Value) {
    o["index"] = json!(a.index);
    if let Some(pps) = p.pps {
        o["pkts_rate"] = json!(pps.rate);
        o["pkts_burst"] = json!(xmitsize(pps.rate, p.pkt_burst));
    }
    o["control_action"] = control_json(a.control);
    if p.conform != Control::OK {
        o["conform_action"] = control_json(p.conform);
    }
    o["overhead"] = json!(p.overhead);
    if p.atm {
        o["linklayer"] = json!("atm");
    }
    o["ref"] = json!(a.refs);
    o["bind"] = json!(a.binds);
}
