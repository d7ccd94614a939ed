//! Lowercase hexadecimal, the one encoding of digests, tokens and ids the
//! daemon prints (SHA-256 names, pairing tokens, upload ids, UUIDs, pipe names).

/// `bytes` as lowercase hex, two digits each.
pub fn lower(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// Lowercase hex SHA-256 of `bytes`: the name of a stored file, the digest
/// of a pairing token. Here, below the files and the config, so the CLI
/// client hashes an upload the way the daemon checks it without using either.
pub fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    lower(&Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    #[test]
    fn two_lowercase_digits_per_byte() {
        assert_eq!(super::lower(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(super::lower(&[]), "");
    }
}
