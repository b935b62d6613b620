//! The files people write: their types (`raw`), strict loading (`load`), every shape error of a
//! refused file (`shape`, reading jsonschema's errors with `json_schema`) and source positions
//! (`source`).

pub mod edit;
pub mod json_schema;
pub mod load;
pub mod raw;
pub mod shape;
pub mod source;
pub mod tree;
