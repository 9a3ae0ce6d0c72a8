#define BOOST_TEST_MODULE sim
#include <boost/test/unit_test.hpp>
