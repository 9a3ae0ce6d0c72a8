#define BOOST_TEST_MODULE cuda
#include <boost/test/unit_test.hpp>
