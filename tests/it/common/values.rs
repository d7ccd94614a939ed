//! Reading the JSON answers tests compare: one member of every element of a
//! list, as the `Vec<&str>` the assertions spell out.

use serde_json::Value;

/// `list`'s elements' string member `member`, in order; panics with `list`
/// when it is not an array of objects carrying that string.
pub fn pluck<'a>(list: &'a Value, member: &str) -> Vec<&'a str> {
    let items = list
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"));
    items
        .iter()
        .map(|e| {
            e[member]
                .as_str()
                .unwrap_or_else(|| panic!("no string {member:?} in {e}"))
        })
        .collect()
}

/// The elements of `list`; panics with `list` when it is not an array.
#[track_caller]
pub fn items(list: &Value) -> &Vec<Value> {
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
}
