//! The font every plot lays its text out with: DejaVu Sans, from Debian's
//! fonts-dejavu-core (plotters draws PNG text itself, and measures SVG
//! text, with the font registered here).

use plotters::style::FontStyle;

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Registers the font as `sans-serif`, once; an error names the file and
/// the package to install.
pub fn register() -> Result<(), String> {
    static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let bytes = std::fs::read(FONT).map_err(|e| {
            format!("{FONT}: {e} (plots need DejaVu Sans: apt-get install fonts-dejavu-core)")
        })?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| format!("{FONT}: not a font plotters can read"))
    })
    .clone()
}
