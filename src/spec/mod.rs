//! The files people write: their types (`raw`), strict loading (`load`), every shape error of a
//! refused file (`shape`, reading jsonschema's errors with `json_schema`) and source positions
//! (`source`).

pub(crate) mod edit;
pub(crate) mod json_schema;
pub mod load;
pub mod raw;
pub(crate) mod shape;
pub(crate) mod source;
pub(crate) mod tree;
