//! The `packet` block (CAPP, Equinix Metal devices). The provider is deprecated upstream; the
//! platform warns once where it installs it.

use super::text;
use crate::diagnostics::Diagnostic;
use crate::model::PacketCluster;
use crate::spec::raw::Packet;
use crate::spec::source::Source;

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, p: &Packet, errs: &mut Vec<Diagnostic>) -> PacketCluster {
    text(src, &format!("{field}.projectID"), &p.project_id, "project ID", errs);
    text(src, &format!("{field}.metro"), &p.metro, "metro", errs);
    if let Some(plan) = &p.plan {
        text(src, &format!("{field}.plan"), plan, "plan", errs);
    }
    if let Some(os) = &p.os {
        text(src, &format!("{field}.os"), os, "operating system", errs);
    }
    PacketCluster {
        project_id: p.project_id.clone(),
        metro: p.metro.clone(),
        plan: p.plan.clone().unwrap_or_else(|| "c3.small.x86".into()),
        os: p.os.clone().unwrap_or_else(|| "ubuntu_24_04".into()),
    }
}
