//! `--map-update NAME KEY VALUE`, `--routes FILE|synthetic:N` and `--sa
//! SPI:KEY`, shared by every command that runs a program: the arguments of
//! [`engine::Contents`], which fills the maps.

#[derive(clap::Args, Clone, Default)]
pub struct MapContents {
    /// Add a map entry before the run: NAME KEY VALUE (KEY/VALUE: integer, IP address, ADDR/LEN for LPM keys, or hex:BYTES)
    #[arg(long = "map-update", num_args = 3, value_names = ["NAME", "KEY", "VALUE"])]
    pub map_update: Vec<String>,
    /// Route table for a forwarding program's maps (fwd_radix, fwd_lctrie,
    /// fwd_lpm_trie):
    /// a file of `ip route` output or a RIB dump (`PREFIX NEXTHOP`, `bgpdump
    /// -m`), or synthetic:N[,seed=S][,hops=H][,no-default] (N prefixes with
    /// a BGP table's length mix)
    #[arg(long, value_name = "FILE|synthetic:N")]
    pub routes: Option<String>,
    /// The security association of an ESP program (esp_3des: a 24-byte
    /// key, esp_aes: 16 bytes): SPI:KEY, the SPI a number, the key in hex
    #[arg(long, value_name = "SPI:KEY")]
    pub sa: Option<String>,
}

impl MapContents {
    /// The contents as the engine takes them.
    pub fn spec(&self) -> engine::Contents {
        engine::Contents {
            map_update: self
                .map_update
                .chunks(3)
                .map(|u| {
                    let [map, key, value] = u else {
                        unreachable!("clap gives three values")
                    };
                    engine::MapUpdate {
                        map: map.clone(),
                        key: key.clone(),
                        value: value.clone(),
                    }
                })
                .collect(),
            routes: self.routes.clone(),
            sa: self.sa.clone(),
        }
    }
}
