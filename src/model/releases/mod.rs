//! The release tables: what kaas-gitops knows of each upstream release it renders for, read from
//! the upstream sources at each tag (each table cites its files). `providers`: the Cluster API
//! contract each provider release speaks and the core the Kamaji provider needs; `kamaji`: the
//! newest Kubernetes each Kamaji release runs; `api_skew`: the Kamaji API each Kamaji provider
//! release is built against; `crds`: the CRD release assets `validate` checks against.

pub(crate) mod api_skew;
pub(crate) mod crds;
pub mod kamaji;
pub(crate) mod providers;
