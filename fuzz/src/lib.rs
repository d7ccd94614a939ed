//! Helpers of the fuzz targets, shared with the property tests in `tests/`
//! (`tests/it/prop_codec.rs` and `tests/it/prop_envelope.rs` include these files
//! by path), so that fuzzing and the CI property tests check one model.

pub mod frames;
pub mod model;
