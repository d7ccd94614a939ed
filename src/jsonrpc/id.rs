//! A request's id kept as the exact JSON text received (§3.3: echoed byte
//! for byte), inline when short so answering costs no allocation.

/// A request id as the exact JSON text received, stored inline when short
/// (almost always) so answering costs no allocation.
#[derive(Debug, Clone)]
pub enum IdText {
    Inline { len: u8, bytes: [u8; 38] },
    Heap(Box<str>),
}

impl IdText {
    /// Copies the raw JSON text of an id.
    pub fn new(raw: &str) -> Self {
        let mut bytes = [0u8; 38];
        match bytes.get_mut(..raw.len()) {
            Some(slot) => {
                slot.copy_from_slice(raw.as_bytes());
                Self::Inline {
                    len: raw.len() as u8,
                    bytes,
                }
            }
            None => Self::Heap(raw.into()),
        }
    }

    /// The JSON text's bytes, as they are echoed: no UTF-8 check, since
    /// [`IdText::new`] copied them from a `&str`. `null` if the inline
    /// length were out of range, which `new` never makes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Self::Inline { len, bytes } => bytes.get(..*len as usize).unwrap_or(b"null"),
            Self::Heap(s) => s.as_bytes(),
        }
    }

    /// The JSON text (`null` where [`IdText::as_bytes`] is).
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or("null")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_text_round_trips_short_and_long() {
        for s in [
            "1",
            "\"zc-out-0\"",
            "null",
            &"9".repeat(38),
            &"7".repeat(200),
        ] {
            assert_eq!(IdText::new(s).as_str(), s);
            assert_eq!(IdText::new(s).as_bytes(), s.as_bytes());
        }
        assert!(matches!(
            IdText::new(&"9".repeat(38)),
            IdText::Inline { .. }
        ));
        assert!(matches!(IdText::new(&"9".repeat(39)), IdText::Heap(_)));
    }
}
