//! Which management cluster runs each tenant's control plane (kaas.yaml
//! `spec.managementClusters`, a tenant's `spec.placement`). A placement is decided once, by name
//! or by labels and free capacity, and recorded in `kaas.lock` like a VIP: adding, removing or
//! resizing other tenants or clusters never moves a tenant. Moving one is a migration of its
//! Cluster API objects and datastore that git cannot carry, so it is refused unless the tenant
//! file acknowledges it (docs/management-clusters.md).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::ops::{Deref, DerefMut};

use crate::diagnostics::Diagnostic;
use crate::model::{Platform, Tenant};
use crate::spec::source::Source;

/// One management cluster (`spec.managementClusters[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagementCluster {
    /// Its name (a DNS-1123 label).
    pub name: String,
    /// What `spec.placement.selector` matches.
    pub labels: BTreeMap<String, String>,
    /// Tenants without a placement run here, and its Flux entry point stays `flux/`.
    pub default: bool,
    /// At most this many tenants.
    pub max_tenants: Option<u32>,
    /// At most this many control plane replicas summed over its tenants.
    pub max_replicas: Option<u32>,
    /// Its own VIP pools, in place of the platform's.
    pub vip_pools: Option<Vec<(IpAddr, IpAddr)>>,
    /// The kubeconfig context that reaches it (`context`), for `status` and `wait`.
    pub context: Option<String>,
}

/// What a tenant file asks for (`spec.placement`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PlacementRequest {
    /// No `placement`: the default management cluster.
    #[default]
    Default,
    /// `managementCluster: <name>`.
    Named(String),
    /// `selector`: a cluster carrying every one of these labels.
    Selector(BTreeMap<String, String>),
}

impl PlacementRequest {
    /// The tenant file's field that asked.
    fn field(&self) -> &'static str {
        match self {
            PlacementRequest::Default => "metadata.name",
            PlacementRequest::Named(_) => "spec.placement.managementCluster",
            PlacementRequest::Selector(_) => "spec.placement.selector",
        }
    }

    fn allows(&self, mc: &ManagementCluster) -> bool {
        match self {
            PlacementRequest::Default => mc.default,
            PlacementRequest::Named(n) => *n == mc.name,
            PlacementRequest::Selector(s) => s.iter().all(|(k, v)| mc.labels.get(k) == Some(v)),
        }
    }

    fn describe(&self) -> String {
        match self {
            PlacementRequest::Default => "the default management cluster".into(),
            PlacementRequest::Named(n) => format!("`{n}`"),
            PlacementRequest::Selector(s) => format!("a management cluster labelled {}", labels(s)),
        }
    }
}

fn labels(s: &BTreeMap<String, String>) -> String {
    let inner: Vec<String> = s.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!("{{{}}}", inner.join(", "))
}

/// The management cluster of each tenant, and which one is the default, as `kaas.lock` keeps
/// them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placements {
    by_tenant: BTreeMap<String, String>,
    /// The default management cluster: the one whose Flux reads `flux/`.
    pub default: Option<String>,
}

impl Deref for Placements {
    type Target = BTreeMap<String, String>;
    fn deref(&self) -> &Self::Target {
        &self.by_tenant
    }
}

impl DerefMut for Placements {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.by_tenant
    }
}

/// The steps of a move, which every refusal names.
const MOVE_STEPS: &str = "moving a running tenant is a migration (its Cluster API objects with `clusterctl move`, its datastore with Kamaji's DataStore migration): follow docs/management-clusters.md, \"Moving a tenant\", then add `acknowledge: [move]` to `spec.placement`";

/// What one management cluster holds while tenants are placed.
#[derive(Default, Clone, Copy)]
struct Usage {
    tenants: u32,
    replicas: u32,
}

impl Usage {
    /// How many more tenants of `replicas` replicas `mc` takes (`u32::MAX`: no limit).
    fn free(&self, mc: &ManagementCluster, replicas: u32) -> u32 {
        let by_tenants = mc.max_tenants.map_or(u32::MAX, |m| m.saturating_sub(self.tenants));
        let by_replicas = mc
            .max_replicas
            .map_or(u32::MAX, |m| m.saturating_sub(self.replicas) / replicas.max(1));
        by_tenants.min(by_replicas)
    }
}

/// Places every tenant (sets [`Tenant::management_cluster`]) and returns the placements for
/// `kaas.lock`. `previous` is the lock's. Tenants are taken in name order: recorded ones stay,
/// then those asking for a cluster by name (or the default), then those asking by labels, each
/// on the matching cluster with the most room for it (ties: the first listed). A tenant that
/// does not fit is an error at the field that asked.
pub fn place(
    platform: &Platform,
    tenants: &mut [(Tenant, &Source)],
    previous: &Placements,
) -> Result<Placements, Vec<Diagnostic>> {
    let mcs = &platform.management_clusters;
    let mut errs = Vec::new();
    if mcs.is_empty() {
        for (t, src) in tenants.iter() {
            // Back to one management cluster: fine for the tenants on the default one, whose
            // Flux reads `flux/` as before; any other would be handed to it.
            if let Some(mc) = previous
                .get(&t.name)
                .filter(|mc| previous.default.as_ref() != Some(*mc))
            {
                errs.push(gone(src, t, mc, mcs));
            } else if t.placement != PlacementRequest::Default {
                errs.push(
                    src.error(
                        t.placement.field(),
                        "kaas.yaml lists no management clusters to choose from",
                    )
                    .with_hint("list them in kaas.yaml `spec.managementClusters`, or drop `spec.placement`"),
                );
            }
        }
        // The recorded default stays in the lock: listing clusters again must name it default.
        let kept = Placements {
            default: previous.default.clone(),
            ..Placements::default()
        };
        return if errs.is_empty() { Ok(kept) } else { Err(errs) };
    }
    let index: BTreeMap<&str, usize> = mcs.iter().enumerate().map(|(i, m)| (m.name.as_str(), i)).collect();
    let mut usage = vec![Usage::default(); mcs.len()];
    let mut chosen: Vec<Option<usize>> = vec![None; tenants.len()];
    // 1. Recorded placements stay where the request still allows them.
    for (i, (t, src)) in tenants.iter().enumerate() {
        let Some(recorded) = previous.get(&t.name) else {
            continue;
        };
        let Some(&at) = index.get(recorded.as_str()) else {
            errs.push(gone(src, t, recorded, mcs));
            continue;
        };
        if t.placement.allows(&mcs[at]) || (t.placement == PlacementRequest::Default && !t.placement_move_acknowledged)
        {
            // A tenant that drops its `placement` stays: the default is for new tenants.
            chosen[i] = Some(at);
            usage[at].tenants += 1;
            usage[at].replicas += t.cp_replicas;
        } else if !t.placement_move_acknowledged {
            errs.push(
                src.error(
                    t.placement.field(),
                    format!(
                        "tenant `{}` runs on management cluster `{recorded}` (kaas.lock); {} would move it",
                        t.name,
                        t.placement.describe()
                    ),
                )
                .with_hint(format!(
                    "to stay, ask for `{recorded}`{}; {MOVE_STEPS}",
                    if matches!(t.placement, PlacementRequest::Selector(_)) {
                        " (or, if kaas.yaml changed the labels of that cluster, give them back)"
                    } else {
                        ""
                    }
                )),
            );
        }
    }
    // 2. New (and acknowledged moving) tenants, by name first, then by labels.
    for by_labels in [false, true] {
        for (i, (t, src)) in tenants.iter().enumerate() {
            if chosen[i].is_some() || previous.get(&t.name).is_some_and(|r| !index.contains_key(r.as_str())) {
                continue;
            }
            if matches!(t.placement, PlacementRequest::Selector(_)) != by_labels {
                continue;
            }
            if let Some(r) = previous.get(&t.name)
                && !t.placement_move_acknowledged
                && index.contains_key(r.as_str())
            {
                // Refused above.
                continue;
            }
            let candidates: Vec<usize> = (0..mcs.len()).filter(|&m| t.placement.allows(&mcs[m])).collect();
            let Some(&best) = candidates
                .iter()
                .max_by_key(|&&m| (usage[m].free(&mcs[m], t.cp_replicas), std::cmp::Reverse(m)))
            else {
                errs.push(no_match(src, t, mcs));
                continue;
            };
            if usage[best].free(&mcs[best], t.cp_replicas) == 0 {
                let full: Vec<String> = candidates.iter().map(|&m| fill(&mcs[m], usage[m])).collect();
                errs.push(
                    src.error(
                        t.placement.field(),
                        format!("no room for tenant `{}` on {}: {}", t.name, t.placement.describe(), full.join("; ")),
                    )
                    .with_hint("raise `capacity` in kaas.yaml `spec.managementClusters`, add a management cluster, or place the tenant elsewhere"),
                );
                continue;
            }
            chosen[i] = Some(best);
            usage[best].tenants += 1;
            usage[best].replicas += t.cp_replicas;
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let mut placements = Placements {
        default: platform.default_management_cluster().map(|m| m.name.clone()),
        ..Placements::default()
    };
    for (i, (t, _)) in tenants.iter_mut().enumerate() {
        if let Some(m) = chosen[i] {
            t.management_cluster = Some(mcs[m].name.clone());
            placements.insert(t.name.clone(), mcs[m].name.clone());
        }
    }
    Ok(placements)
}

/// Recorded tenants the capacity no longer holds (it was lowered under them): an error at the
/// cluster's capacity in kaas.yaml, where the change was made.
pub fn over_capacity(platform: &Platform, platform_src: &Source, tenants: &[(Tenant, &Source)]) -> Vec<Diagnostic> {
    let mut usage: BTreeMap<&str, Usage> = BTreeMap::new();
    for (t, _) in tenants {
        if let Some(m) = &t.management_cluster {
            let u = usage.entry(m).or_default();
            u.tenants += 1;
            u.replicas += t.cp_replicas;
        }
    }
    let mut errs = Vec::new();
    for (i, mc) in platform.management_clusters.iter().enumerate() {
        let u = usage.get(mc.name.as_str()).copied().unwrap_or_default();
        for (limit, used, field) in [
            (mc.max_tenants, u.tenants, "tenants"),
            (mc.max_replicas, u.replicas, "controlPlaneReplicas"),
        ] {
            if let Some(limit) = limit
                && used > limit
            {
                errs.push(
                    platform_src
                        .error(
                            &format!("spec.managementClusters[{i}].capacity.{field}"),
                            format!("management cluster `{}` already runs {used} ({field}), more than {limit}", mc.name),
                        )
                        .with_hint("a capacity limits new placements; raise it to at least what runs there, or move tenants away first"),
                );
            }
        }
    }
    errs
}

/// The default management cluster's Flux reads `flux/`: once recorded, another default would
/// hand that Flux another cluster's tenants (and `flux/<old>/` to nobody), also when the old one
/// is no longer listed (its Flux still reads `flux/`). An error at the new default's line.
pub fn default_moves(platform: &Platform, platform_src: &Source, previous: &Placements) -> Option<Diagnostic> {
    let was = previous.default.as_deref()?;
    let now = platform.default_management_cluster()?;
    if now.name == was {
        return None;
    }
    let i = platform.management_clusters.iter().position(|m| m.name == now.name)?;
    let field = if now.default {
        format!("spec.managementClusters[{i}].default")
    } else {
        format!("spec.managementClusters[{i}].name")
    };
    let listed = platform.management_clusters.iter().any(|m| m.name == was);
    Some(
        platform_src
            .error(
                &field,
                format!(
                    "the default management cluster is `{was}` (kaas.lock){}: its Flux reads `flux/`, which would then hold `{}`'s tenants",
                    if listed { "" } else { ", which kaas.yaml no longer lists" },
                    now.name
                ),
            )
            .with_hint(format!(
                "keep `{was}` listed and the default (`default: true` on it, or list it first), with no tenants if it runs none; the default cannot change, as no Flux can be told by git to read another folder"
            )),
    )
}

/// The first render with management clusters: a tenant rendered before (so running on the one
/// management cluster, now the default) that asks for another is a move too.
pub fn unrecorded_moves(
    platform: &Platform,
    tenants: &[(Tenant, &Source)],
    previous: &Placements,
    deployed: &dyn Fn(&str) -> bool,
) -> Vec<Diagnostic> {
    let Some(default) = platform.default_management_cluster() else {
        return Vec::new();
    };
    tenants
        .iter()
        .filter(|(t, _)| !previous.contains_key(&t.name) && !t.placement_move_acknowledged)
        .filter(|(t, _)| t.management_cluster.as_deref().is_some_and(|m| m != default.name))
        .filter(|(t, _)| deployed(&t.name))
        .map(|(t, src)| {
            src.error(
                t.placement.field(),
                format!(
                    "tenant `{}` runs on the default management cluster `{}` (it was rendered before kaas.yaml listed management clusters); {} would move it",
                    t.name,
                    default.name,
                    t.placement.describe()
                ),
            )
            .with_hint(format!("to stay, drop `spec.placement`; {MOVE_STEPS}"))
        })
        .collect()
}

fn gone(src: &Source, t: &Tenant, mc: &str, mcs: &[ManagementCluster]) -> Diagnostic {
    let listed: Vec<&str> = mcs.iter().map(|m| m.name.as_str()).collect();
    src.error(
        t.placement.field(),
        format!(
            "tenant `{}` runs on management cluster `{mc}` (kaas.lock), which kaas.yaml does not list",
            t.name
        ),
    )
    .with_hint(if listed.is_empty() {
        format!(
            "list `{mc}` in kaas.yaml `spec.managementClusters` again (a tenant never moves by itself); to move the tenant, {MOVE_STEPS}"
        )
    } else {
        format!(
            "list `{mc}` in kaas.yaml `spec.managementClusters` again (listed: {}); a tenant never moves by itself",
            listed.join(", ")
        )
    })
}

fn no_match(src: &Source, t: &Tenant, mcs: &[ManagementCluster]) -> Diagnostic {
    let listed: Vec<String> = mcs
        .iter()
        .map(|m| {
            if m.labels.is_empty() {
                format!("`{}`", m.name)
            } else {
                format!("`{}` {}", m.name, labels(&m.labels))
            }
        })
        .collect();
    src.error(
        t.placement.field(),
        format!("kaas.yaml lists no {}", t.placement.describe().trim_start_matches("a ")),
    )
    .with_hint(format!("management clusters: {}", listed.join(", ")))
}

fn fill(mc: &ManagementCluster, u: Usage) -> String {
    let mut parts = Vec::new();
    if let Some(m) = mc.max_tenants {
        parts.push(format!("{}/{m} tenants", u.tenants));
    }
    if let Some(m) = mc.max_replicas {
        parts.push(format!("{}/{m} control plane replicas", u.replicas));
    }
    format!("`{}` holds {}", mc.name, parts.join(", "))
}
