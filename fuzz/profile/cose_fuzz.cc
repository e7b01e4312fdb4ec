// Fuzzes the COSE_Sign1 decoder and verifier (src/profile/cose.h, cbor.h) with a key set holding
// the unit tests' fixed Ed25519 key (kid "kvcs-test-key") and an ES256 key (kid "es256-key").
// Invariants: no crash; a verified message's payload lies inside the input.
#include <cstdint>
#include <cstdlib>

#include "common/hex.h"
#include "profile/cbor.h"
#include "profile/cose.h"

using namespace kvcs;
using namespace kvcs::profile;

namespace {

const KeySet& Keys() {
  static const KeySet* keys = [] {
    auto* ks = new KeySet;
    auto ed = SigningKey::FromEd25519Seed(
        *FromHex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"),
        Bytes{'k', 'v', 'c', 's', '-', 't', 'e', 's', 't', '-', 'k', 'e', 'y'});
    if (!ed.ok() || !ks->Add(ed->Public()).ok()) std::abort();
    auto es = VerifyKey::FromPublicPem(
        "-----BEGIN PUBLIC KEY-----\n"
        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEYP7UuiVanTHJYet0xjVtaMBJuJI7\n"
        "Yfps5mliLmDyn7Z5A/4QCLi8maQa6elWKLxk8vGyDC1+n1F3o8KU1EYimQ==\n"
        "-----END PUBLIC KEY-----\n",
        Bytes{'e', 's', '2', '5', '6', '-', 'k', 'e', 'y'});
    if (!es.ok() || !ks->Add(*es).ok()) std::abort();
    return ks;
  }();
  return *keys;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteSpan in(data, size);
  (void)cbor::Decode(in, 8);
  (void)DecodeCoseSign1(in);
  auto v = VerifyCoseSign1(in, Keys());
  if (v.ok()) {
    if (v->payload.data() < data || v->payload.data() + v->payload.size() > data + size) {
      std::abort();
    }
    (void)ParseManifest(AsStringView(v->payload));
  }
  return 0;
}
