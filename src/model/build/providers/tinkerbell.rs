//! The `tinkerbell` block (CAPT, bare metal through Tinkerbell).

use super::{one_of, text};
use crate::diagnostics::Diagnostic;
use crate::model::TinkerbellCluster;
use crate::model::build::fields::labels;
use crate::spec::raw::Tinkerbell;
use crate::spec::source::Source;

/// `bootOptions.bootMode` of `TinkerbellMachineTemplate` (cluster-api-provider-tinkerbell v0.7.0 CRD).
const BOOT_MODES: [&str; 4] = ["netboot", "isoboot", "iso", "customboot"];

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, t: &Tinkerbell, errs: &mut Vec<Diagnostic>) -> TinkerbellCluster {
    if t.hardware_selector.is_empty() {
        // Without affinity CAPT lists every Hardware without an owner, in every namespace
        // (v0.7.0 `controller/machine/hardware.go`): one tenant would take another's machines.
        errs.push(
            src.error(
                &format!("{field}.hardwareSelector"),
                "no hardware selector: the tenant would take any free Hardware of the management cluster",
            )
            .with_hint("label the tenant's Hardware and select it, e.g. `hardwareSelector: {tenant: acme}`"),
        );
    }
    labels(src, &format!("{field}.hardwareSelector"), &t.hardware_selector, errs);
    for (key, value) in [
        ("imageRegistry", &t.image_registry),
        ("osDistro", &t.os_distro),
        ("osVersion", &t.os_version),
    ] {
        if let Some(v) = value {
            text(src, &format!("{field}.{key}"), v, key, errs);
        }
    }
    if let Some(mode) = &t.boot_mode {
        one_of(src, &format!("{field}.bootMode"), mode, "boot mode", &BOOT_MODES, errs);
    }
    TinkerbellCluster {
        hardware_selector: t.hardware_selector.clone(),
        image_registry: t.image_registry.clone(),
        os_distro: t.os_distro.clone(),
        os_version: t.os_version.clone(),
        boot_mode: t.boot_mode.clone(),
    }
}
