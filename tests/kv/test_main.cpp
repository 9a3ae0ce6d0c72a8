#define BOOST_TEST_MODULE kv
#include <boost/test/unit_test.hpp>
