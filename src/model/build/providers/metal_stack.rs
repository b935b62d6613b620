//! The `metal-stack` block (CAPMS, bare-metal machines). The VIP rule is in `tenant_rules`:
//! it needs the allocated address.

use super::text;
use crate::diagnostics::Diagnostic;
use crate::model::{MetalStackCluster, MetalStackFirewall};
use crate::spec::raw::MetalStack;
use crate::spec::source::Source;

/// Validates the block at `field`.
pub(super) fn cluster(src: &Source, field: &str, m: &MetalStack, errs: &mut Vec<Diagnostic>) -> MetalStackCluster {
    text(src, &format!("{field}.projectID"), &m.project_id, "project ID", errs);
    text(src, &format!("{field}.partition"), &m.partition, "partition", errs);
    text(src, &format!("{field}.network"), &m.network, "network ID", errs);
    text(src, &format!("{field}.image"), &m.image, "image", errs);
    text(src, &format!("{field}.size"), &m.size, "machine size", errs);
    let firewall = m.firewall.as_ref().map(|f| {
        text(src, &format!("{field}.firewall.image"), &f.image, "image", errs);
        text(src, &format!("{field}.firewall.size"), &f.size, "machine size", errs);
        if f.networks.is_empty() {
            errs.push(
                src.error(
                    &format!("{field}.firewall.networks"),
                    "a firewall needs at least one external network",
                )
                .with_hint("name the networks it routes to, e.g. `[internet]`; the node network is added by CAPMS"),
            );
        }
        for (i, n) in f.networks.iter().enumerate() {
            text(src, &format!("{field}.firewall.networks[{i}]"), n, "network ID", errs);
        }
        MetalStackFirewall {
            image: f.image.clone(),
            size: f.size.clone(),
            networks: f.networks.clone(),
        }
    });
    MetalStackCluster {
        project_id: m.project_id.clone(),
        partition: m.partition.clone(),
        network: m.network.clone(),
        image: m.image.clone(),
        size: m.size.clone(),
        firewall,
    }
}
