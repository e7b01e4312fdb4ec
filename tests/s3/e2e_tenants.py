#!/usr/bin/python3
"""End-to-end: two users of one `kvcs store` kept apart (boto3 over real sockets).

Usage: e2e_tenants.py /path/to/kvcs
Users: "kvcstestkey" (its own user, from an old-style [key] section), "bobkey" acting as user bob,
and "bobkey2", a second key of bob. Bob is refused (403 AccessDenied) on every operation on the
first user's bucket and objects: HEAD/GET/PUT/DELETE, list v1/v2, list uploads, multipart
create/upload/complete/abort/list parts, CopyObject with the bucket as source and as destination,
DeleteObjects, presigned GET/PUT signed by bob, GetBucketAcl; the bucket is absent from bob's
ListBuckets; creating the same name is BucketAlreadyExists (409), the owner re-creating it 200
(us-east-1). Bob's second key shares bob's buckets. Ownership survives a restart.
"""
import os
import sys
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check, denied, expect_error, http_status  # noqa: E402

BOB_CONFIG = ("[key bobkey]\nsecret = bob-secret-0123456789\nuser = bob\ndisplay_name = Bob\n"
              "[key bobkey2]\nsecret = bob-secret-2-0123456789\nuser = bob\n")


def test_refused(alice, bob, big):
    alice.create_bucket(Bucket="alice-b")
    alice.put_object(Bucket="alice-b", Key="secret.txt", Body=b"alice's data")
    up = alice.create_multipart_upload(Bucket="alice-b", Key="mp")["UploadId"]
    bob.create_bucket(Bucket="bob-b")
    bob.put_object(Bucket="bob-b", Key="mine", Body=b"bob's data")

    # Bucket-level.
    expect_error("403", 403, "HEAD bucket", bob.head_bucket, Bucket="alice-b")
    denied("ListObjectsV2", bob.list_objects_v2, Bucket="alice-b")
    denied("ListObjects", bob.list_objects, Bucket="alice-b")
    denied("ListMultipartUploads", bob.list_multipart_uploads, Bucket="alice-b")
    denied("GetBucketLocation", bob.get_bucket_location, Bucket="alice-b")
    denied("GetBucketAcl", bob.get_bucket_acl, Bucket="alice-b")
    denied("DeleteBucket", bob.delete_bucket, Bucket="alice-b")
    denied("DeleteObjects", bob.delete_objects, Bucket="alice-b",
           Delete={"Objects": [{"Key": "secret.txt"}]})
    names = [b["Name"] for b in bob.list_buckets()["Buckets"]]
    check(names == ["bob-b"], "bob's ListBuckets: %s" % names)
    names = [b["Name"] for b in alice.list_buckets()["Buckets"]]
    check(names == ["alice-b"], "alice's ListBuckets: %s" % names)
    expect_error("BucketAlreadyExists", 409, "CreateBucket taken", bob.create_bucket,
                 Bucket="alice-b")
    alice.create_bucket(Bucket="alice-b")  # the owner again: 200 in us-east-1

    # Object-level.
    expect_error("403", 403, "HEAD object", bob.head_object, Bucket="alice-b", Key="secret.txt")
    denied("GET object", bob.get_object, Bucket="alice-b", Key="secret.txt")
    denied("GET missing object", bob.get_object, Bucket="alice-b", Key="nope")
    denied("GetObjectAcl", bob.get_object_acl, Bucket="alice-b", Key="secret.txt")
    denied("PUT object", bob.put_object, Bucket="alice-b", Key="planted", Body=b"x")
    denied("DELETE object", bob.delete_object, Bucket="alice-b", Key="secret.txt")

    # Copy: alice's bucket as source (into bob's) and as destination (from bob's).
    denied("CopyObject source", bob.copy_object, Bucket="bob-b", Key="stolen",
           CopySource={"Bucket": "alice-b", "Key": "secret.txt"})
    denied("CopyObject destination", bob.copy_object, Bucket="alice-b", Key="planted",
           CopySource={"Bucket": "bob-b", "Key": "mine"})
    check("Contents" not in bob.list_objects_v2(Bucket="bob-b", Prefix="stolen"),
          "a copy out of alice's bucket landed")

    # Multipart, every step.
    denied("CreateMultipartUpload", bob.create_multipart_upload, Bucket="alice-b", Key="mp2")
    denied("UploadPart", bob.upload_part, Bucket="alice-b", Key="mp", UploadId=up, PartNumber=1,
           Body=b"x")
    denied("ListParts", bob.list_parts, Bucket="alice-b", Key="mp", UploadId=up)
    denied("CompleteMultipartUpload", bob.complete_multipart_upload, Bucket="alice-b", Key="mp",
           UploadId=up, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": "x"}]})
    denied("AbortMultipartUpload", bob.abort_multipart_upload, Bucket="alice-b", Key="mp",
           UploadId=up)
    # The owner's upload still works.
    etag = alice.upload_part(Bucket="alice-b", Key="mp", UploadId=up, PartNumber=1,
                             Body=big)["ETag"]
    alice.complete_multipart_upload(Bucket="alice-b", Key="mp", UploadId=up,
                                    MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})

    # Presigned URLs signed by bob.
    url = bob.generate_presigned_url("get_object", Params={"Bucket": "alice-b",
                                                           "Key": "secret.txt"}, ExpiresIn=300)
    check(http_status(url) == 403, "bob's presigned GET")
    url = bob.generate_presigned_url("put_object", Params={"Bucket": "alice-b", "Key": "planted"},
                                     ExpiresIn=300)
    check(http_status(urllib.request.Request(url, data=b"x", method="PUT")) == 403,
          "bob's presigned PUT")
    # ... while alice's own presigned GET works.
    url = alice.generate_presigned_url("get_object", Params={"Bucket": "alice-b",
                                                             "Key": "secret.txt"}, ExpiresIn=300)
    check(http_status(url) == 200, "alice's presigned GET")

    # Nothing of bob's reached alice's bucket; alice's data is intact.
    keys = sorted(o["Key"] for o in alice.list_objects_v2(Bucket="alice-b")["Contents"])
    check(keys == ["mp", "secret.txt"], "alice's keys: %s" % keys)
    check(alice.get_object(Bucket="alice-b", Key="secret.txt")["Body"].read() == b"alice's data",
          "alice's object")
    # Alice is refused on bob's bucket the same way.
    denied("alice GET bob's", alice.get_object, Bucket="bob-b", Key="mine")
    # Owner and ACL name the users.
    acl = alice.get_bucket_acl(Bucket="alice-b")
    check(acl["Owner"]["ID"] == harness.ACCESS_KEY, "alice's bucket owner: %s" % acl["Owner"])
    acl = bob.get_bucket_acl(Bucket="bob-b")
    check(acl["Owner"] == {"ID": "bob", "DisplayName": "Bob"}, "bob's owner: %s" % acl["Owner"])


def test_same_user_two_keys(bob2):
    check(bob2.get_object(Bucket="bob-b", Key="mine")["Body"].read() == b"bob's data",
          "bob's second key reads bob's bucket")
    denied("bob's second key on alice's", bob2.get_object, Bucket="alice-b", Key="secret.txt")


def main():
    kvcs = sys.argv[1]
    big = os.urandom(5 << 20)
    with harness.Store(kvcs, extra_config=BOB_CONFIG) as store:
        alice = harness.boto_client(store.endpoint)
        bob = harness.boto_client(store.endpoint, "bobkey", "bob-secret-0123456789")
        bob2 = harness.boto_client(store.endpoint, "bobkey2", "bob-secret-2-0123456789")
        test_refused(alice, bob, big)
        test_same_user_two_keys(bob2)
        store.stop()
        store.start()
        alice = harness.boto_client(store.endpoint)
        bob = harness.boto_client(store.endpoint, "bobkey", "bob-secret-0123456789")
        denied("after restart", bob.get_object, Bucket="alice-b", Key="secret.txt")
        expect_error("BucketAlreadyExists", 409, "after restart", bob.create_bucket,
                     Bucket="alice-b")
        check(alice.get_object(Bucket="alice-b", Key="secret.txt")["Body"].read() ==
              b"alice's data", "alice after restart")
    print("e2e_tenants: OK")


if __name__ == "__main__":
    main()
