#define BOOST_TEST_MODULE structured
#include <boost/test/unit_test.hpp>
