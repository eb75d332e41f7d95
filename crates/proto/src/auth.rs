//! Token challenge/response. The server sends a fresh random nonce; the client proves it knows
//! the shared token by returning HMAC-SHA256(token, context ‖ nonce). The token never crosses the
//! wire, and a captured proof is useless for any other nonce (unlike iperf3's replayable RSA token).

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::codec::{from_hex, to_hex};

/// Length of a server nonce in bytes.
pub const NONCE_LEN: usize = 32;

/// Domain separation, so a proof can never be mistaken for an HMAC from another protocol.
const CONTEXT: &[u8] = b"wirespeed-auth-v1\0";

fn mac(token: &str, nonce: &[u8; NONCE_LEN]) -> Hmac<Sha256> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(token.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    mac.update(CONTEXT);
    mac.update(nonce);
    mac
}

/// The client's proof for `nonce`, as hex.
pub fn prove(token: &str, nonce: &[u8; NONCE_LEN]) -> String {
    to_hex(&mac(token, nonce).finalize().into_bytes())
}

/// True when `proof` (hex) is right for `token` and `nonce`; compares in constant time.
pub fn verify(token: &str, nonce: &[u8; NONCE_LEN], proof: &str) -> bool {
    match from_hex::<32>(proof) {
        Some(bytes) => mac(token, nonce).verify_slice(&bytes).is_ok(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proof_verifies_only_for_same_token_and_nonce() {
        let nonce = [9u8; NONCE_LEN];
        let proof = prove("secret", &nonce);
        assert_eq!(proof.len(), 64);
        assert!(verify("secret", &nonce, &proof));
        assert!(!verify("Secret", &nonce, &proof));
        assert!(!verify("secret", &[8u8; NONCE_LEN], &proof));
        assert!(!verify("secret", &nonce, "not hex"));
        assert!(!verify("secret", &nonce, ""));
    }
}
