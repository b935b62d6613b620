//! The files people write: their types (`raw`), strict loading (`load`) and source positions
//! (`source`).

pub mod load;
pub mod raw;
pub mod source;
