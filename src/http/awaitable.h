// The coroutine type of HTTP handlers, body readers and response writers: an Asio awaitable
// running on the connection's executor.
#ifndef KVCS_HTTP_AWAITABLE_H_
#define KVCS_HTTP_AWAITABLE_H_

#include <utility>  // must precede Asio on Boost 1.74 + GCC 12 (common/asio.h)

#include <boost/asio/awaitable.hpp>

namespace kvcs::http {

template <typename T>
using Awaitable = boost::asio::awaitable<T>;

}  // namespace kvcs::http

#endif  // KVCS_HTTP_AWAITABLE_H_
