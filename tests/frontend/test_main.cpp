#define BOOST_TEST_MODULE frontend
#include <boost/test/unit_test.hpp>
