// S3 access control lists. See acl.h.
#include "s3/acl.h"

#include <utility>

#include "common/strings.h"
#include "s3/http_util.h"
#include "s3/s3_error.h"
#include "s3/xml.h"

namespace kvcs::s3 {
namespace {

constexpr std::pair<Permission, std::string_view> kPermissionNames[] = {
    {Permission::kRead, "READ"},
    {Permission::kWrite, "WRITE"},
    {Permission::kReadAcp, "READ_ACP"},
    {Permission::kWriteAcp, "WRITE_ACP"},
    {Permission::kFullControl, "FULL_CONTROL"}};

constexpr std::pair<std::string_view, Permission> kGrantHeaders[] = {
    {"x-amz-grant-read", Permission::kRead},
    {"x-amz-grant-write", Permission::kWrite},
    {"x-amz-grant-read-acp", Permission::kReadAcp},
    {"x-amz-grant-write-acp", Permission::kWriteAcp},
    {"x-amz-grant-full-control", Permission::kFullControl}};

std::string_view PermissionName(Permission p) {
  for (const auto& [perm, name] : kPermissionNames) {
    if (perm == p) return name;
  }
  return "READ";
}

std::optional<Permission> PermissionByName(std::string_view name) {
  for (const auto& [perm, n] : kPermissionNames) {
    if (n == name) return perm;
  }
  return std::nullopt;
}

Status BadGrant(std::string message) {
  return S3Status(S3Error::kInvalidArgument, std::move(message));
}

// A grantee named by a header's `type=value` or an XML <Grantee>'s child.
Result<Grant> MakeGrant(std::string_view type, std::string_view value, Permission p,
                        const KnownUser& known) {
  Grant g;
  g.permission = p;
  if (type == "id" || type == "ID") {
    if (!known(value)) return BadGrant("Invalid id: " + std::string(value));
    g.kind = GranteeKind::kUser;
    g.user_id = std::string(value);
  } else if (type == "uri" || type == "URI") {
    if (value == kAllUsersUri) {
      g.kind = GranteeKind::kAllUsers;
    } else if (value == kAuthenticatedUsersUri) {
      g.kind = GranteeKind::kAuthenticatedUsers;
    } else {
      return BadGrant("Invalid group uri: " + std::string(value));
    }
  } else if (type == "emailAddress" || type == "EmailAddress") {
    return S3Status(S3Error::kNotImplemented, "e-mail grantees are not supported");
  } else {
    return BadGrant("Invalid grantee type: " + std::string(type));
  }
  return g;
}

Status AddGrant(Acl* acl, Grant g) {
  if (acl->grants.size() >= kMaxGrants) return BadGrant("an ACL holds at most 100 grants");
  acl->grants.push_back(std::move(g));
  return Status::Ok();
}

// One x-amz-grant-* value: `type="value"` pairs separated by commas.
Status ParseGrantHeader(std::string_view value, Permission p, const KnownUser& known, Acl* acl) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = Trim(value.substr(0, comma), " \t");
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) return BadGrant("grant must be type=\"value\"");
    std::string_view type = Trim(item.substr(0, eq), " \t");
    std::string_view v = Trim(item.substr(eq + 1), " \t");
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    KVCS_ASSIGN_OR_RETURN(Grant g, MakeGrant(type, v, p, known));
    KVCS_RETURN_IF_ERROR(AddGrant(acl, std::move(g)));
  }
  return Status::Ok();
}

Result<Acl> CannedAcl(std::string_view name) {
  Acl acl;
  auto all = [](Permission p) { return Grant{GranteeKind::kAllUsers, "", p}; };
  if (name == "private" || name == "bucket-owner-read" || name == "bucket-owner-full-control") {
    // Objects belong to their bucket's owner (access.h), so the bucket-owner-* ACLs are private.
  } else if (name == "public-read") {
    acl.grants.push_back(all(Permission::kRead));
  } else if (name == "public-read-write") {
    acl.grants.push_back(all(Permission::kRead));
    acl.grants.push_back(all(Permission::kWrite));
  } else if (name == "authenticated-read") {
    acl.grants.push_back({GranteeKind::kAuthenticatedUsers, "", Permission::kRead});
  } else {
    return BadGrant("unsupported canned ACL: " + std::string(name));
  }
  return acl;
}

std::string GrantXml(const std::string& grantee, Permission p) {
  return "<Grant>" + grantee + XmlTag("Permission", PermissionName(p)) + "</Grant>";
}

constexpr std::string_view kXsi = "xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" ";

std::string UserGrantee(const User& u) {
  return "<Grantee " + std::string(kXsi) + "xsi:type=\"CanonicalUser\">" + XmlTag("ID", u.id) +
         XmlTag("DisplayName", u.display_name) + "</Grantee>";
}

}  // namespace

bool AclGrants(const Acl& acl, std::string_view user_id, Permission p) {
  for (const Grant& g : acl.grants) {
    if (g.permission != p && g.permission != Permission::kFullControl) continue;
    switch (g.kind) {
      case GranteeKind::kAllUsers:
        return true;
      case GranteeKind::kAuthenticatedUsers:
        if (!user_id.empty()) return true;
        break;
      case GranteeKind::kUser:
        if (!user_id.empty() && g.user_id == user_id) return true;
        break;
    }
  }
  return false;
}

// One grant per line: "<kind> <PERMISSION> <user id>" with kind u (user), a (AllUsers) or
// t (AuthenticatedUsers). User ids hold no newline (config.cc refuses none; ids come from the
// config).
std::string EncodeAcl(const Acl& acl) {
  std::string out;
  for (const Grant& g : acl.grants) {
    if (!out.empty()) out += '\n';
    out += g.kind == GranteeKind::kUser ? 'u' : g.kind == GranteeKind::kAllUsers ? 'a' : 't';
    out += ' ';
    out += PermissionName(g.permission);
    out += ' ';
    out += g.user_id;
  }
  return out;
}

Result<Acl> DecodeAcl(std::string_view text) {
  Acl acl;
  auto bad = [] { return S3Status(S3Error::kInternalError, "stored ACL is damaged"); };
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.size() < 3 || line[1] != ' ') return bad();
    size_t sp = line.find(' ', 2);
    if (sp == std::string_view::npos) return bad();
    auto perm = PermissionByName(line.substr(2, sp - 2));
    if (!perm) return bad();
    Grant g;
    g.permission = *perm;
    switch (line[0]) {
      case 'u':
        g.kind = GranteeKind::kUser;
        g.user_id = std::string(line.substr(sp + 1));
        if (g.user_id.empty()) return bad();
        break;
      case 'a':
        g.kind = GranteeKind::kAllUsers;
        break;
      case 't':
        g.kind = GranteeKind::kAuthenticatedUsers;
        break;
      default:
        return bad();
    }
    acl.grants.push_back(std::move(g));
  }
  return acl;
}

Result<std::optional<Acl>> AclFromHeaders(const http::Request& request, const KnownUser& known) {
  auto canned = request.Header("x-amz-acl");
  std::optional<Acl> out;
  for (const auto& [name, perm] : kGrantHeaders) {
    for (const auto& [k, v] : request.headers) {
      if (!AsciiIEquals(k, name)) continue;
      if (!out) out.emplace();
      KVCS_RETURN_IF_ERROR(ParseGrantHeader(v, perm, known, &*out));
    }
  }
  if (canned && out) {
    return S3Status(S3Error::kInvalidRequest,
                    "Specifying both Canned ACLs and Header Grants is not allowed");
  }
  if (canned) {
    KVCS_ASSIGN_OR_RETURN(Acl acl, CannedAcl(Trim(*canned, " \t")));
    out = std::move(acl);
  }
  return out;
}

Result<Acl> ParseAccessControlPolicy(std::string_view document, const KnownUser& known) {
  KVCS_ASSIGN_OR_RETURN(XmlElement root, ParseXml(document));
  auto malformed = [](std::string m) { return S3Status(S3Error::kMalformedXML, std::move(m)); };
  if (root.name != "AccessControlPolicy") {
    return malformed("root element must be <AccessControlPolicy>");
  }
  Acl acl;
  const XmlElement* list = root.Child("AccessControlList");
  if (!list) return acl;
  for (const XmlElement& g : list->children) {
    if (g.name != "Grant") continue;
    const XmlElement* grantee = g.Child("Grantee");
    const XmlElement* perm = g.Child("Permission");
    if (!grantee || !perm) return malformed("<Grant> needs <Grantee> and <Permission>");
    auto p = PermissionByName(Trim(perm->text, " \t\r\n"));
    if (!p) return malformed("unknown <Permission> " + perm->text);
    const XmlElement* who = nullptr;
    for (std::string_view child : {"ID", "URI", "EmailAddress"}) {
      if ((who = grantee->Child(child))) break;
    }
    if (!who) return malformed("<Grantee> needs <ID>, <URI> or <EmailAddress>");
    KVCS_ASSIGN_OR_RETURN(Grant grant, MakeGrant(who->name, Trim(who->text, " \t\r\n"), *p, known));
    KVCS_RETURN_IF_ERROR(AddGrant(&acl, std::move(grant)));
  }
  return acl;
}

std::string AccessControlPolicyXml(const User& owner, const Acl& acl,
                                   const std::function<User(std::string_view)>& user_by_id) {
  std::string x =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<AccessControlPolicy "
      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner>" +
      XmlTag("ID", owner.id) + XmlTag("DisplayName", owner.display_name) +
      "</Owner><AccessControlList>" + GrantXml(UserGrantee(owner), Permission::kFullControl);
  for (const Grant& g : acl.grants) {
    if (g.kind == GranteeKind::kUser && g.user_id == owner.id &&
        g.permission == Permission::kFullControl) {
      continue;  // already shown
    }
    std::string grantee;
    if (g.kind == GranteeKind::kUser) {
      grantee = UserGrantee(user_by_id(g.user_id));
    } else {
      grantee =
          "<Grantee " + std::string(kXsi) + "xsi:type=\"Group\">" +
          XmlTag("URI", g.kind == GranteeKind::kAllUsers ? kAllUsersUri : kAuthenticatedUsersUri) +
          "</Grantee>";
    }
    x += GrantXml(grantee, g.permission);
  }
  x += "</AccessControlList></AccessControlPolicy>";
  return x;
}

}  // namespace kvcs::s3
