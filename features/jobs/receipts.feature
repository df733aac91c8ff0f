Feature: A worker's report is answered once, however often it is sent
  A worker may send the same report again when it did not hear the answer.
  The report carries a receipt: the same receipt gets the same answer and the
  order is settled only once; the same receipt for another report is refused.

  Background:
    Given the user holds 50 coins
    And the user has ordered 5 copies
    And worker "A" has taken the job
    And worker "A" has rendered copies 1, 2, 3, 4 and 5

  Scenario: A retried completion gets the stored answer
    When worker "A" reports the job finished with receipt "done-1"
    And worker "A" reports the job finished again with receipt "done-1"
    Then both reports get the same answer
    And the order is done
    And the order has been settled once

  Scenario: The same receipt for another report is refused
    When worker "A" reports the job finished with receipt "done-1"
    And worker "A" reports giving up on the job with receipt "done-1"
    Then the report is refused because the receipt was given for another report
    And the order is done
    And the order has been settled once
