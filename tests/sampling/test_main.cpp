#define BOOST_TEST_MODULE sampling
#include <boost/test/unit_test.hpp>
