//! [`KernelSpec`]: an object to load into the kernel (libbpf), with the
//! global data and map sizes sluice's own loader computes from the same
//! [`Settings`], so a program runs in the kernel as it runs in the VM; and
//! [`KernelSpec::load`], which loads it (`sluice load`, `attach`, the
//! traffic generator's program).

use std::path::Path;
use std::sync::atomic::AtomicBool;

use kernel::KernelObject;
use runtime::{Image, LoadOptions};
use serde::{Deserialize, Serialize};

use crate::error::{Error, ObjectError};
use crate::hook_spec::ObjectSource;
use crate::settings::Settings;

/// An object for the kernel and the settings its maps are made with.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct KernelSpec {
    pub object: ObjectSource,
    /// Globals, map sizes, program types.
    #[serde(default)]
    pub settings: Settings,
}

impl KernelSpec {
    /// The object at `path`, default settings.
    pub fn new(path: impl Into<std::path::PathBuf>) -> KernelSpec {
        KernelSpec {
            object: ObjectSource::Path(path.into()),
            settings: Settings::default(),
        }
    }

    /// An object in memory, `name` naming it (its stem names the object
    /// in the kernel), default settings.
    pub fn from_bytes(name: impl Into<String>, bytes: impl Into<Vec<u8>>) -> KernelSpec {
        KernelSpec {
            object: ObjectSource::Bytes {
                name: name.into(),
                bytes: bytes.into(),
            },
            settings: Settings::default(),
        }
    }

    /// The name libbpf gives the object: the file's stem.
    pub fn kernel_name(&self) -> String {
        Path::new(&self.object.name())
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "sluice".into())
    }

    /// Loads the object into the kernel (needs root, or CAP_BPF and
    /// CAP_NET_ADMIN): parsed and laid out as sluice's loader does it (the
    /// running kernel's BTF for CO-RE), then handed to libbpf with those
    /// globals and map sizes. A file is read no more once `stop` is set.
    pub fn load(&self, stop: Option<&'static AtomicBool>) -> Result<KernelObject, Error> {
        let name = self.object.name();
        let at = |cause: ObjectError| Error::Object {
            name: name.clone(),
            cause,
        };
        let bytes = self.object.bytes(stop)?;
        let mut object = obj::Object::parse(&bytes).map_err(|e| at(e.into()))?;
        let mut opts = LoadOptions::default();
        self.settings.apply(&mut object, &mut opts)?;
        let image = Image::load(object, &opts).map_err(|e| at(e.into()))?;
        let kopts = kernel::load_options(&image.object, &image.maps);
        KernelObject::load(&bytes, &self.kernel_name(), &kopts).map_err(|e| at(e.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_names_the_object_by_its_stem() {
        assert_eq!(KernelSpec::new("/tmp/xdp_ddos.o").kernel_name(), "xdp_ddos");
        assert_eq!(KernelSpec::from_bytes("gen.o", vec![]).kernel_name(), "gen");
        assert_eq!(KernelSpec::new("/").kernel_name(), "sluice");
    }

    #[test]
    fn a_bad_object_is_named_before_the_kernel_sees_it() {
        let e = KernelSpec::from_bytes("junk.o", b"not an object".to_vec())
            .load(None)
            .err()
            .unwrap();
        assert!(
            matches!(
                e,
                Error::Object {
                    cause: ObjectError::Parse(_),
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().starts_with("junk.o: "), "{e}");
    }
}
